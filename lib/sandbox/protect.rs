//! The paths inside a writable workspace that stay read-only, because a write there turns
//! into code execution later: `.git/hooks`, `.git/config` (and the same under
//! `.git/modules`), a `.git` file, `.ag/` and `.claude/`.
//!
//! Landlock cannot take a subdirectory back out of a writable tree, so the jail bind-mounts
//! each existing one read-only in the command's private mount namespace. Git directories are
//! also bound onto themselves ("pinned"): a mount point cannot be renamed or removed, so
//! `mv .git elsewhere` cannot route around the read-only hooks. What does not exist yet
//! cannot be a mount point; [`Protected::check`] removes it if the command created it.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How deep `.git/modules` is searched for nested submodule git directories.
const MAX_MODULE_DEPTH: usize = 6;

#[derive(Debug, Default)]
pub(super) struct Protected {
    /// Existing paths bound read-only.
    pub(crate) readonly: Vec<PathBuf>,
    /// Existing git directories bound onto themselves, before the read-only binds.
    pub(crate) pinned: Vec<PathBuf>,
    /// Every protected path and its identity before the command (`None`: absent).
    before: Vec<(PathBuf, Option<(u64, u64)>)>,
}

fn identity(p: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(p)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

impl Protected {
    /// The protected paths of `workspace` as they are now.
    pub(crate) fn plan(workspace: &Path) -> Protected {
        let mut candidates = vec![workspace.join(".ag"), workspace.join(".claude")];
        let mut pinned = Vec::new();
        let git = workspace.join(".git");
        match std::fs::symlink_metadata(&git) {
            Ok(m) if m.is_dir() => {
                pinned.push(git.clone());
                candidates.push(git.join("hooks"));
                candidates.push(git.join("config"));
                modules(&git.join("modules"), 0, &mut pinned, &mut candidates);
            }
            // A `.git` file says where the repository is; rewritten, it could point git at
            // hooks the command wrote.
            Ok(_) => candidates.push(git),
            Err(_) => {}
        }
        let before: Vec<_> = candidates
            .into_iter()
            .map(|p| {
                let id = identity(&p);
                (p, id)
            })
            .collect();
        Protected {
            readonly: before
                .iter()
                .filter(|(_, id)| id.is_some())
                .map(|(p, _)| p.clone())
                .collect(),
            pinned,
            before,
        }
    }

    /// After the command (when none of its processes is left): remove a protected path it
    /// created or replaced, and say so.
    pub(crate) fn check(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for (p, before) in &self.before {
            let now = identity(p);
            if now.is_none() || now == *before {
                if before.is_some() && now.is_none() {
                    notes.push(format!("{} was removed by the command", p.display()));
                }
                continue;
            }
            let removed = match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
                _ => std::fs::remove_file(p),
            };
            let what = if before.is_some() {
                "replaced"
            } else {
                "created"
            };
            notes.push(match removed {
                Ok(()) => format!(
                    "the command {what} {}, which the sandbox keeps read-only; it was removed",
                    p.display()
                ),
                Err(e) => format!(
                    "the command {what} {}, which the sandbox keeps read-only, and it could not be removed: {e}",
                    p.display()
                ),
            });
        }
        notes
    }
}

/// Submodule git directories under `.git/modules` (at any nesting): pin each, protect its
/// hooks and config.
fn modules(dir: &Path, depth: usize, pinned: &mut Vec<PathBuf>, out: &mut Vec<PathBuf>) {
    if depth > MAX_MODULE_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for d in dirs {
        if d.join("HEAD").exists() {
            pinned.push(d.clone());
            out.push(d.join("hooks"));
            out.push(d.join("config"));
            modules(&d.join("modules"), depth + 1, pinned, out);
        } else {
            // A submodule path with slashes nests plain directories.
            modules(&d, depth + 1, pinned, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_finds_git_hooks_config_and_submodules() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "").unwrap();
        std::fs::create_dir_all(ws.join(".git/modules/lib/a/hooks")).unwrap();
        std::fs::write(ws.join(".git/modules/lib/a/HEAD"), "").unwrap();
        std::fs::create_dir(ws.join(".claude")).unwrap();
        let p = Protected::plan(ws);
        assert!(p.readonly.contains(&ws.join(".git/hooks")));
        assert!(p.readonly.contains(&ws.join(".git/config")));
        assert!(p.readonly.contains(&ws.join(".git/modules/lib/a/hooks")));
        assert!(p.readonly.contains(&ws.join(".claude")));
        assert!(!p.readonly.contains(&ws.join(".ag")), "absent: not bound");
        assert_eq!(p.pinned, [ws.join(".git"), ws.join(".git/modules/lib/a")]);
    }

    #[test]
    fn check_removes_what_the_command_created() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        let p = Protected::plan(ws);
        assert!(p.check().is_empty());
        std::fs::create_dir_all(ws.join(".ag")).unwrap();
        std::fs::write(ws.join(".ag/config.toml"), "model = \"evil\"").unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/hooks/pre-commit"), "#!/bin/sh").unwrap();
        let notes = p.check();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("created") && notes[0].contains(".ag"),
            "{notes:?}"
        );
        assert!(!ws.join(".ag").exists());
        assert!(!ws.join(".git/hooks").exists());
        assert!(ws.join(".git").exists());
    }
}
