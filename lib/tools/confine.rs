//! Keeping file tools inside the session's directory.
//!
//! A model-supplied path is resolved the way the kernel would follow it — `..` and every
//! symlink on the way — and only then compared with the cwd. Comparing the text of the path
//! instead would let `link/x` (with `link -> /etc`) or `a/../../x` through.
//!
//! A path that does not exist yet (a file `write` is about to create) is resolved through its
//! deepest existing ancestor; the part below it must be plain names, because `..` after a
//! directory that does not exist cannot be resolved by the kernel either. A dangling symlink
//! is followed by hand, so that writing through `link -> /outside/new` is caught too.
//!
//! This is a check at one moment. `read`, `write` and `edit` then open what it returned
//! beneath the cwd without following any link (`beneath`), so a process that swaps a
//! directory for a symlink between the check and the open makes the call fail, never leave.
//! `glob` and `grep` walk on directory handles (`walk`), so a swap in the middle of a walk
//! is refused the same way.

use std::fs;
use std::path::{Component, Path, PathBuf};

/// Symlinks followed by hand before giving up (the kernel's own limit is 40).
const MAX_HOPS: usize = 40;

/// Resolve a model-supplied path inside `cwd`: relative paths join `cwd`; `..` and symlinks are
/// resolved (for a path that does not exist yet, its deepest existing ancestor is resolved and
/// the rest appended, rejecting any `..` in the rest); the result must stay under `cwd`, else
/// `Err("path X is outside the session's directory Y")`. An empty path means `cwd` itself.
pub(crate) fn confine(cwd: &Path, requested: &str) -> Result<PathBuf, String> {
    let root = canonical_root(cwd)?;
    confine_in(&root, requested)
}

/// `cwd` resolved, so that comparisons with resolved paths mean something.
pub(crate) fn canonical_root(cwd: &Path) -> Result<PathBuf, String> {
    fs::canonicalize(cwd).map_err(|e| {
        format!(
            "the session's directory {} cannot be resolved: {e}",
            cwd.display()
        )
    })
}

/// The directories inside the session's directory where writing a file is really running
/// code or changing what `ag` trusts, and why.
const PROTECTED: [(&str, &str); 3] = [
    (
        ".git",
        "git runs its hooks and the commands its config names (core.fsmonitor, core.hooksPath)",
    ),
    (
        ".ag",
        "ag reads its configuration and agent definitions from it",
    ),
    (
        ".claude",
        "Claude Code reads agents, settings and hooks from it",
    ),
];

/// Refuse a resolved path (from [`confine_in`]) inside `.git/`, `.ag/` or `.claude/`, at any
/// depth, unless `allowed`; the refusal says why and how to allow it.
pub(crate) fn check_protected(root: &Path, resolved: &Path, allowed: bool) -> Result<(), String> {
    if allowed {
        return Ok(());
    }
    let rel = resolved.strip_prefix(root).unwrap_or(resolved);
    for c in rel.components() {
        if let Some((dir, why)) = PROTECTED.iter().find(|(d, _)| c.as_os_str() == *d) {
            return Err(format!(
                "{} is inside {dir}/, which the write and edit tools do not change: {why}. \
                 The user can make this change, or allow it with `ag-prompt --allow-protected` \
                 (or `protected_writes = \"allow\"` under [permissions] in the user config)",
                rel.display()
            ));
        }
    }
    Ok(())
}

/// [`confine`] with an already canonical `root`.
pub(crate) fn confine_in(root: &Path, requested: &str) -> Result<PathBuf, String> {
    if requested.contains('\0') {
        return Err(format!("path {requested:?} contains a NUL byte"));
    }
    let req = if requested.is_empty() { "." } else { requested };
    // `join` with an absolute path replaces the base, which is what an absolute request means.
    let joined = root.join(req);
    let resolved = resolve(&joined, 0).map_err(|why| format!("path {requested} {why}"))?;
    if resolved.starts_with(root) {
        Ok(resolved)
    } else {
        Err(format!(
            "path {requested} is outside the session's directory {}",
            root.display()
        ))
    }
}

/// The real location of absolute `path`, which need not exist.
fn resolve(path: &Path, hops: usize) -> Result<PathBuf, String> {
    let comps: Vec<Component<'_>> = path.components().collect();
    // Longest existing prefix first; the shortest prefix is the root, which always resolves.
    for i in (1..=comps.len()).rev() {
        let prefix: PathBuf = comps[..i].iter().collect();
        match fs::canonicalize(&prefix) {
            Ok(base) => return append_plain(base, &comps[i..]),
            Err(_) => {
                let is_link = fs::symlink_metadata(&prefix)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                if is_link {
                    // A dangling symlink: its target does not exist yet, but it is where a
                    // write would land, so it is what gets checked.
                    if hops >= MAX_HOPS {
                        return Err("has too many levels of symbolic links".to_string());
                    }
                    let target =
                        fs::read_link(&prefix).map_err(|e| format!("cannot be resolved: {e}"))?;
                    let mut next = prefix.parent().unwrap_or(Path::new("/")).join(target);
                    next.extend(&comps[i..]);
                    return resolve(&next, hops + 1);
                }
            }
        }
    }
    Err("cannot be resolved".to_string())
}

/// `base` (resolved, existing) with the not-yet-existing rest of the path appended.
fn append_plain(mut base: PathBuf, rest: &[Component<'_>]) -> Result<PathBuf, String> {
    for c in rest {
        match c {
            Component::Normal(name) => {
                base.push(name);
                // Everything below the deepest existing ancestor should be missing; a symlink
                // here (possible when the ancestor could not be read) was never resolved.
                let is_link = fs::symlink_metadata(&base)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                if is_link {
                    return Err(format!(
                        "cannot be resolved safely: {} is a symlink that could not be followed",
                        base.display()
                    ));
                }
            }
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "cannot be resolved: `..` follows {}, which does not exist",
                    base.display()
                ))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err("cannot be resolved".to_string());
            }
        }
    }
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let cwd = base.join("cwd");
        let outside = base.join("outside");
        fs::create_dir_all(cwd.join("sub")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret.txt"), "secret").unwrap();
        fs::write(cwd.join("sub/f.txt"), "f").unwrap();
        (top, cwd, outside)
    }

    #[test]
    fn relative_and_absolute_inside_are_allowed() {
        let (_t, cwd, _) = setup();
        assert_eq!(confine(&cwd, "sub/f.txt").unwrap(), cwd.join("sub/f.txt"));
        assert_eq!(
            confine(&cwd, "./sub/../sub/f.txt").unwrap(),
            cwd.join("sub/f.txt")
        );
        let abs = cwd.join("sub/f.txt");
        assert_eq!(confine(&cwd, abs.to_str().unwrap()).unwrap(), abs);
        assert_eq!(confine(&cwd, "").unwrap(), cwd);
        assert_eq!(confine(&cwd, ".").unwrap(), cwd);
    }

    #[test]
    fn escapes_are_denied() {
        let (_t, cwd, outside) = setup();
        let err = confine(&cwd, "../outside/secret.txt").unwrap_err();
        assert!(err.contains("outside the session's directory"), "{err}");
        assert!(err.contains(cwd.to_str().unwrap()), "{err}");
        assert!(confine(&cwd, "../x").is_err());
        assert!(confine(&cwd, outside.join("secret.txt").to_str().unwrap()).is_err());
        assert!(confine(&cwd, "/etc/passwd").is_err());
        // `a` exists: resolves to the parent of cwd, then `x` below it.
        assert!(confine(&cwd, "sub/../../x").is_err());
        // `a` does not exist: `..` after a missing directory is refused outright.
        assert!(confine(&cwd, "a/../../x").is_err());
        assert!(confine(&cwd, "a/../x").is_err());
        // Same prefix text is not the same directory.
        let sibling = format!("{}x/file", cwd.display());
        assert!(confine(&cwd, &sibling).is_err());
    }

    #[test]
    fn new_nested_path_inside_is_allowed() {
        let (_t, cwd, _) = setup();
        assert_eq!(
            confine(&cwd, "new/deeper/file.txt").unwrap(),
            cwd.join("new/deeper/file.txt")
        );
        assert_eq!(confine(&cwd, "sub/new/./x").unwrap(), cwd.join("sub/new/x"));
    }

    #[test]
    fn symlinks_are_followed_before_checking() {
        let (_t, cwd, outside) = setup();
        symlink(&outside, cwd.join("out")).unwrap();
        symlink(outside.join("secret.txt"), cwd.join("secret_link")).unwrap();
        symlink(cwd.join("sub"), cwd.join("inlink")).unwrap();
        assert!(confine(&cwd, "out/secret.txt").is_err());
        assert!(confine(&cwd, "out/new/file").is_err());
        assert!(confine(&cwd, "secret_link").is_err());
        assert_eq!(
            confine(&cwd, "inlink/f.txt").unwrap(),
            cwd.join("sub/f.txt")
        );
        // Dangling links are followed by hand: one pointing outside is refused, one pointing
        // inside resolves to its (future) target.
        symlink(outside.join("nothing_yet"), cwd.join("dangling_out")).unwrap();
        assert!(confine(&cwd, "dangling_out").is_err());
        symlink("sub/later.txt", cwd.join("dangling_in")).unwrap();
        assert_eq!(
            confine(&cwd, "dangling_in").unwrap(),
            cwd.join("sub/later.txt")
        );
        // A loop is an error, not a hang.
        symlink(cwd.join("loop_b"), cwd.join("loop_a")).unwrap();
        symlink(cwd.join("loop_a"), cwd.join("loop_b")).unwrap();
        assert!(confine(&cwd, "loop_a/x").is_err());
    }

    #[test]
    fn cwd_given_through_a_symlink_still_works() {
        let (t, cwd, _) = setup();
        let alias = t.path().canonicalize().unwrap().join("alias");
        symlink(&cwd, &alias).unwrap();
        assert_eq!(confine(&alias, "sub/f.txt").unwrap(), cwd.join("sub/f.txt"));
    }
}
