//! `edit {path, old_string, new_string, replace_all?}`: exact string replacement.
//!
//! Exact matching, and refusing an ambiguous match unless `replace_all` is set, is what makes
//! an edit reviewable: the model has to quote what it changes, and a stale quote fails loudly
//! instead of changing the wrong place.

use std::io::{ErrorKind, Read, Seek, Write};

use super::beneath::Beneath;
use super::confine::{canonical_root, check_protected, confine_in};
use super::{shown, Args, ToolCtx, ToolOutput};

pub(super) fn run(args: &Args<'_>, ctx: &ToolCtx) -> Result<ToolOutput, String> {
    let path = args.req_str("path")?;
    let old = args.req_str("old_string")?;
    let new = args.req_str("new_string")?;
    let replace_all = args.opt_bool("replace_all")?.unwrap_or(false);
    let root = canonical_root(&ctx.cwd)?;
    let p = confine_in(&root, path)?;
    check_protected(&root, &p, ctx.allow_protected)?;
    let name = shown(&root, &p);

    if old.is_empty() {
        return Err(format!(
            "old_string is empty; to create {name} or replace all of it, use write"
        ));
    }
    if old == new {
        return Err(format!(
            "old_string and new_string are identical; {name} was not changed"
        ));
    }
    if p.is_dir() {
        return Err(format!("{name} is a directory, not a file"));
    }
    if let Some(text) = ctx.editor_read(&p) {
        let text = text.map_err(|e| format!("cannot read {name} in the editor: {e}"))?;
        let (updated, count) = replace(&text, (old, new, replace_all), &name)?;
        ctx.editor_write(&p, &updated)
            .unwrap_or(Ok(()))
            .map_err(|e| format!("cannot write {name} in the editor: {e}"))?;
        return Ok(replaced(count, &name));
    }
    // One descriptor, opened beneath the cwd without following links, is read and written:
    // what is changed is the file that was read.
    let rel = p.strip_prefix(&root).unwrap_or(&p);
    let mut file = Beneath::new(&root)
        .and_then(|d| d.open(rel, libc::O_RDWR))
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound => format!("{name} does not exist"),
            _ => super::beneath::failure("edit", &name, &e),
        })?;
    let mut text = Vec::new();
    file.read_to_end(&mut text)
        .map_err(|e| format!("cannot read {name}: {e}"))?;
    let text = String::from_utf8(text)
        .map_err(|_| format!("{name} is not valid UTF-8 text; edit changes text files only"))?;

    let (updated, count) = replace(&text, (old, new, replace_all), &name)?;
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(updated.as_bytes()))
        .map_err(|e| format!("cannot write {name}: {e}"))?;
    Ok(replaced(count, &name))
}

/// `text` with `old` replaced by `new` (every one with `replace_all`, else the only one), and
/// how many were replaced.
fn replace(
    text: &str,
    (old, new, replace_all): (&str, &str, bool),
    name: &str,
) -> Result<(String, usize), String> {
    let count = text.matches(old).count();
    if count == 0 {
        return Err(format!("old_string not found in {name}"));
    }
    if count > 1 && !replace_all {
        return Err(format!(
            "old_string matches {count} times in {name}; add surrounding context to make it unique, or set replace_all to replace every one"
        ));
    }
    let updated = if replace_all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    Ok((updated, count))
}

fn replaced(count: usize, name: &str) -> ToolOutput {
    let plural = if count == 1 { "" } else { "s" };
    ToolOutput::ok(format!("replaced {count} occurrence{plural} in {name}"))
}

#[cfg(test)]
mod tests {
    use super::super::run;
    use super::*;
    use serde_json::json;
    use std::fs;

    fn ctx_with(body: &str) -> (tempfile::TempDir, ToolCtx) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path().canonicalize().unwrap());
        fs::write(ctx.cwd.join("f.txt"), body).unwrap();
        (dir, ctx)
    }

    fn contents(ctx: &ToolCtx) -> String {
        fs::read_to_string(ctx.cwd.join("f.txt")).unwrap()
    }

    #[test]
    fn unique_match_is_replaced() {
        let (_d, ctx) = ctx_with("alpha beta gamma\n");
        let out = run(
            "edit",
            &json!({"path": "f.txt", "old_string": "beta", "new_string": "BETA"}),
            &ctx,
        );
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, "replaced 1 occurrence in f.txt");
        assert_eq!(contents(&ctx), "alpha BETA gamma\n");
    }

    #[test]
    fn no_match_is_an_error() {
        let (_d, ctx) = ctx_with("alpha\n");
        let out = run(
            "edit",
            &json!({"path": "f.txt", "old_string": "zeta", "new_string": "x"}),
            &ctx,
        );
        assert!(out.is_error);
        assert_eq!(out.text, "old_string not found in f.txt");
        assert_eq!(contents(&ctx), "alpha\n");
    }

    #[test]
    fn multiple_matches_need_replace_all() {
        let (_d, ctx) = ctx_with("x = 1; x = 2; x = 3;");
        let out = run(
            "edit",
            &json!({"path": "f.txt", "old_string": "x =", "new_string": "y ="}),
            &ctx,
        );
        assert!(out.is_error);
        assert!(
            out.text.contains("matches 3 times in f.txt"),
            "{}",
            out.text
        );
        assert!(out.text.contains("replace_all"), "{}", out.text);
        assert_eq!(contents(&ctx), "x = 1; x = 2; x = 3;");
        let out = run(
            "edit",
            &json!({"path": "f.txt", "old_string": "x =", "new_string": "y =", "replace_all": true}),
            &ctx,
        );
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, "replaced 3 occurrences in f.txt");
        assert_eq!(contents(&ctx), "y = 1; y = 2; y = 3;");
    }

    #[test]
    fn other_failures_say_where() {
        let (_d, ctx) = ctx_with("a");
        let out = run(
            "edit",
            &json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
            &ctx,
        );
        assert!(
            out.is_error && out.text.contains("nope.txt does not exist"),
            "{}",
            out.text
        );
        let out = run(
            "edit",
            &json!({"path": "f.txt", "old_string": "", "new_string": "b"}),
            &ctx,
        );
        assert!(out.is_error && out.text.contains("empty"), "{}", out.text);
        let out = run(
            "edit",
            &json!({"path": "../f.txt", "old_string": "a", "new_string": "b"}),
            &ctx,
        );
        assert!(out.is_error && out.text.contains("outside"), "{}", out.text);
    }
}
