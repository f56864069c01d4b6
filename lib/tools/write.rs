//! `write {path, content}`: create or overwrite a file, creating its parent directories.
//!
//! The target is resolved by `confine` before anything is created, and then created and
//! opened beneath the cwd without following links (`beneath`), so missing parents are made
//! only inside the cwd and a directory swapped for a symlink cannot carry the write outside.

use std::io::{ErrorKind, Write};

use super::beneath::{swapped, Beneath};
use super::confine::{canonical_root, check_protected, confine_in};
use super::{shown, Args, ToolCtx, ToolOutput};

pub(super) fn run(args: &Args<'_>, ctx: &ToolCtx) -> Result<ToolOutput, String> {
    let path = args.req_str("path")?;
    let content = args.req_str("content")?;
    let root = canonical_root(&ctx.cwd)?;
    let p = confine_in(&root, path)?;
    check_protected(&root, &p, ctx.allow_protected)?;
    let name = shown(&root, &p);
    if p.is_dir() {
        return Err(format!("{name} is a directory; give a file path to write"));
    }
    let existed = p.exists();
    if let Some(written) = ctx.editor_write(&p, content) {
        written.map_err(|e| format!("cannot write {name} in the editor: {e}"))?;
        return Ok(wrote(content, &name, existed));
    }
    let rel = p.strip_prefix(&root).unwrap_or(&p);
    let failed = |e: std::io::Error| super::beneath::failure("write", &name, &e);
    let dir = Beneath::new(&root).map_err(failed)?;
    if let Some(parent) = rel.parent() {
        dir.create_dirs(parent).map_err(|e| {
            if swapped(&e) {
                failed(e)
            } else {
                format!(
                    "cannot create directory {} for {name}: {e}",
                    shown(&root, &root.join(parent))
                )
            }
        })?;
    }
    let (mut file, existed) = match dir.open(rel, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL) {
        Ok(f) => (f, false),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => (
            dir.open(rel, libc::O_WRONLY | libc::O_TRUNC)
                .map_err(failed)?,
            true,
        ),
        Err(e) => return Err(failed(e)),
    };
    file.write_all(content.as_bytes())
        .map_err(|e| format!("cannot write {name}: {e}"))?;
    Ok(wrote(content, &name, existed))
}

fn wrote(content: &str, name: &str, existed: bool) -> ToolOutput {
    let what = if existed { "overwrote" } else { "created" };
    ToolOutput::ok(format!("wrote {} bytes to {name} ({what})", content.len()))
}

#[cfg(test)]
mod tests {
    use super::super::run;
    use super::*;
    use serde_json::json;
    use std::fs;

    #[test]
    fn creates_parent_dirs_and_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path().canonicalize().unwrap());
        let out = run(
            "write",
            &json!({"path": "a/b/c.txt", "content": "hello"}),
            &ctx,
        );
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, "wrote 5 bytes to a/b/c.txt (created)");
        assert_eq!(
            fs::read_to_string(ctx.cwd.join("a/b/c.txt")).unwrap(),
            "hello"
        );
        let out = run(
            "write",
            &json!({"path": "a/b/c.txt", "content": "bye"}),
            &ctx,
        );
        assert_eq!(out.text, "wrote 3 bytes to a/b/c.txt (overwrote)");
        assert_eq!(
            fs::read_to_string(ctx.cwd.join("a/b/c.txt")).unwrap(),
            "bye"
        );
        let out = run("write", &json!({"path": "a", "content": "x"}), &ctx);
        assert!(
            out.is_error && out.text.contains("is a directory"),
            "{}",
            out.text
        );
        let out = run("write", &json!({"path": "x.txt"}), &ctx);
        assert!(
            out.is_error && out.text.contains("`content`"),
            "{}",
            out.text
        );
    }

    #[test]
    fn cannot_write_outside() {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let cwd = base.join("cwd");
        let outside = base.join("outside");
        fs::create_dir(&cwd).unwrap();
        fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, cwd.join("out")).unwrap();
        let ctx = ToolCtx::new(cwd.clone());
        let attempts = [
            "../escaped.txt".to_string(),
            outside.join("abs.txt").to_str().unwrap().to_string(),
            "out/through_link.txt".to_string(),
            "out/new_dir/deep.txt".to_string(),
            "a/../../x".to_string(),
        ];
        for path in &attempts {
            let out = run("write", &json!({"path": path, "content": "x"}), &ctx);
            assert!(out.is_error, "{path}: {}", out.text);
        }
        assert_eq!(
            fs::read_dir(&outside).unwrap().count(),
            0,
            "nothing written outside"
        );
        assert!(!base.join("escaped.txt").exists() && !base.join("x").exists());
        // The refused `a/../../x` must not have created `a` either.
        assert!(!cwd.join("a").exists());
    }
}
