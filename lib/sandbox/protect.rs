//! The paths inside a writable workspace that stay read-only, because a write there turns
//! into code execution later, outside the sandbox: `.ag/`, `.claude/`, everything git reads
//! to find its configuration and hooks, and — wherever they are, when a writable root holds
//! them — the store (`$AG_HOME`) and the user's configuration (`$XDG_CONFIG_HOME/ag`,
//! `~/.claude`).
//!
//! Git's rule is decided from what git reads, not from two names. In every git directory of
//! the workspace (the top `.git`, each submodule's under `.git/modules`, and each nested
//! repository's), only what commits and branches need stays writable: [`GIT_WRITABLE`].
//! Everything else there (`config`, `config.worktree`, `hooks`, `info`, `commondir`,
//! `worktrees`, `objects/info` with its `alternates`, …) is read-only, and a `.git` file
//! (`gitdir: …`) is too: nothing the command writes can point git at a configuration or hooks
//! of its own.
//!
//! Landlock cannot take a subdirectory back out of a writable tree, so the jail bind-mounts
//! each existing one read-only in the command's private mount namespace. Git directories are
//! also bound onto themselves ("pinned"): a mount point cannot be renamed or removed, so
//! `mv .git elsewhere` cannot route around them. The git directory itself stays writable,
//! because git writes `index.lock` and `HEAD.lock` beside what they replace. What does not
//! exist yet cannot be a mount point: [`Protected::check`] removes, once the command's
//! processes are gone, whatever of this kind it created — a new `commondir` or `config` in a
//! git directory, a `.git` file, or the configuration and hooks of a repository it made with
//! `git init` where the user's git would find it.

use std::collections::HashSet;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::nested::git_entries;

/// How deep `.git/modules` is searched for nested submodule git directories.
const MAX_MODULE_DEPTH: usize = 6;
/// What stays writable in a git directory: what commits, branches and merges write. Lock
/// files (`index.lock`, …) are written too, but are removed if one outlives the command.
pub(crate) const GIT_WRITABLE: &[&str] = &[
    "objects",
    "refs",
    "logs",
    "index",
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "COMMIT_EDITMSG",
    "packed-refs",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "AUTO_MERGE",
];

fn git_may_keep(name: &std::ffi::OsStr) -> bool {
    name.to_str().is_some_and(|n| GIT_WRITABLE.contains(&n))
}

#[derive(Debug, Default)]
pub(super) struct Protected {
    /// Existing paths bound read-only.
    pub(crate) readonly: Vec<PathBuf>,
    /// Existing git directories bound onto themselves, before the read-only binds.
    pub(crate) pinned: Vec<PathBuf>,
    /// Every protected path and its identity before the command (`None`: absent).
    before: Vec<(PathBuf, Option<(u64, u64)>)>,
    /// Each git directory and the names in it before the command.
    gitdirs: Vec<(PathBuf, HashSet<OsString>)>,
    /// The workspace and the nested `.git` entries it had.
    workspace: PathBuf,
    nested: HashSet<PathBuf>,
}

/// `p` with its symbolic links resolved as far as it exists, the rest appended.
fn absolute(p: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut at = p.to_path_buf();
    loop {
        if let Ok(real) = std::fs::canonicalize(&at) {
            return missing.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (at.file_name().map(|n| n.to_os_string()), at.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                at = parent.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

fn identity(p: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(p)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

fn names(dir: &Path) -> HashSet<OsString> {
    std::fs::read_dir(dir)
        .map(|it| it.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

impl Protected {
    /// The protected paths of `workspace` as they are now, and of `private` (the store, the
    /// user's configuration) where they lie inside a writable root in `roots`.
    pub(crate) fn plan(workspace: &Path, private: &[PathBuf], roots: &[PathBuf]) -> Protected {
        let mut p = Protected {
            workspace: workspace.to_path_buf(),
            ..Protected::default()
        };
        let mut candidates = vec![workspace.join(".ag"), workspace.join(".claude")];
        let roots: Vec<PathBuf> = roots.iter().map(|r| absolute(r)).collect();
        for path in private {
            p.private(path, &roots, &mut candidates);
        }
        for git in git_entries(workspace) {
            p.git_entry(&git, &mut candidates);
            p.nested.insert(git);
        }
        p.before = candidates
            .into_iter()
            .map(|c| {
                let id = identity(&c);
                (c, id)
            })
            .collect();
        p.readonly.extend(
            p.before
                .iter()
                .filter(|(_, id)| id.is_some())
                .map(|(c, _)| c.clone()),
        );
        p
    }

    /// A private path inside a writable root: read-only, and each folder between the root and
    /// it pinned, so no rename can route around it. One that holds a root is left alone
    /// (binding it would make the root read-only).
    fn private(&mut self, path: &Path, roots: &[PathBuf], candidates: &mut Vec<PathBuf>) {
        let path = absolute(path);
        let Some(root) = roots.iter().find(|r| path.starts_with(r) && path != **r) else {
            return;
        };
        let mut between: Vec<PathBuf> = path
            .ancestors()
            .skip(1)
            .take_while(|a| *a != root.as_path())
            .filter(|a| a.is_dir())
            .map(Path::to_path_buf)
            .collect();
        between.reverse();
        for dir in between {
            if !self.pinned.contains(&dir) {
                self.pinned.push(dir);
            }
        }
        if !candidates.contains(&path) {
            candidates.push(path);
        }
    }

    /// A `.git` entry: a directory gets the git directory rule, a file (`gitdir: …`, which
    /// says where the repository is) is read-only.
    fn git_entry(&mut self, git: &Path, candidates: &mut Vec<PathBuf>) {
        match std::fs::symlink_metadata(git) {
            Ok(m) if m.is_dir() => self.gitdir(git, 0, candidates),
            Ok(_) => candidates.push(git.to_path_buf()),
            Err(_) => {}
        }
    }

    /// Pin a git directory and protect everything in it but [`GIT_WRITABLE`]; submodules'
    /// git directories under `modules` get the same rule.
    fn gitdir(&mut self, dir: &Path, depth: usize, candidates: &mut Vec<PathBuf>) {
        self.pinned.push(dir.to_path_buf());
        let before = names(dir);
        for name in &before {
            if git_may_keep(name) {
                continue;
            }
            if name == "modules" && depth <= MAX_MODULE_DEPTH {
                self.modules(&dir.join(name), depth, candidates);
            } else {
                self.readonly.push(dir.join(name));
            }
        }
        // `objects/info/alternates` adds object stores; `objects/info` holds nothing a commit
        // needs.
        candidates.push(dir.join("objects/info"));
        self.gitdirs.push((dir.to_path_buf(), before));
    }

    fn modules(&mut self, dir: &Path, depth: usize, candidates: &mut Vec<PathBuf>) {
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
                self.gitdir(&d, depth + 1, candidates);
            } else if depth < MAX_MODULE_DEPTH {
                // A submodule path with slashes nests plain directories.
                self.modules(&d, depth + 1, candidates);
            }
        }
    }

    /// After the command (when none of its processes is left): remove a protected path it
    /// created or replaced, and what it added to a git directory beyond [`GIT_WRITABLE`];
    /// say so.
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
            let what = if before.is_some() {
                "replaced"
            } else {
                "created"
            };
            notes.push(remove(p, what));
        }
        let known: HashSet<&Path> = self.gitdirs.iter().map(|(d, _)| d.as_path()).collect();
        for (dir, before) in &self.gitdirs {
            strip_gitdir(dir, Some(before), &mut notes);
            for sub in module_gitdirs(&dir.join("modules")) {
                if !known.contains(sub.as_path()) {
                    strip_gitdir(&sub, None, &mut notes);
                }
            }
        }
        for git in git_entries(&self.workspace) {
            if !self.nested.contains(&git) {
                new_repository(&git, &mut notes);
            }
        }
        notes
    }
}

/// Remove what the command put in a git directory beyond [`GIT_WRITABLE`] (everything of
/// that kind, for a directory it made: `before` is `None`).
fn strip_gitdir(dir: &Path, before: Option<&HashSet<OsString>>, notes: &mut Vec<String>) {
    let mut now: Vec<OsString> = names(dir).into_iter().collect();
    now.sort();
    for name in now {
        let existed = before.is_some_and(|b| b.contains(&name));
        if name == "modules" {
            // Known submodules' directories are checked on their own (see `check`).
            if before.is_none() {
                for sub in module_gitdirs(&dir.join(&name)) {
                    strip_gitdir(&sub, None, notes);
                }
            }
            continue;
        }
        if existed || git_may_keep(&name) {
            continue;
        }
        notes.push(remove(&dir.join(&name), "created"));
    }
    if before.is_none() {
        let info = dir.join("objects/info");
        if info.exists() {
            notes.push(remove(&info, "created"));
        }
    }
}

fn module_gitdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if p.join("HEAD").exists() {
                out.push(p);
            } else if depth < MAX_MODULE_DEPTH {
                stack.push((p, depth + 1));
            }
        }
    }
    out.sort();
    out
}

/// A `.git` the command made in the workspace: a repository keeps only what commits need
/// (its configuration and hooks go); a `.git` file, which could send git anywhere, goes.
fn new_repository(git: &Path, notes: &mut Vec<String>) {
    match std::fs::symlink_metadata(git) {
        Ok(m) if m.is_dir() => strip_gitdir(git, None, notes),
        Ok(_) => notes.push(remove(git, "created")),
        Err(_) => {}
    }
}

fn remove(p: &Path, what: &str) -> String {
    let removed = match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
        _ => std::fs::remove_file(p),
    };
    match removed {
        Ok(()) => format!(
            "the command {what} {}, which the sandbox keeps read-only; it was removed",
            p.display()
        ),
        Err(e) => format!(
            "the command {what} {}, which the sandbox keeps read-only, and it could not be removed: {e}",
            p.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_protects_all_of_git_but_what_commits_need() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        for dir in [
            ".git/hooks",
            ".git/info",
            ".git/objects/info",
            ".git/refs",
            ".git/logs",
        ] {
            std::fs::create_dir_all(ws.join(dir)).unwrap();
        }
        for f in [".git/config", ".git/HEAD", ".git/index", ".git/description"] {
            std::fs::write(ws.join(f), "").unwrap();
        }
        std::fs::create_dir_all(ws.join(".git/modules/lib/a/hooks")).unwrap();
        std::fs::write(ws.join(".git/modules/lib/a/HEAD"), "").unwrap();
        std::fs::create_dir_all(ws.join("vendor/x")).unwrap();
        std::fs::write(ws.join("vendor/x/.git"), "gitdir: ../../.git/modules/lib/a").unwrap();
        std::fs::create_dir(ws.join(".claude")).unwrap();
        let p = Protected::plan(ws, &[], &[]);
        for ro in [
            ".git/hooks",
            ".git/config",
            ".git/info",
            ".git/description",
            ".git/objects/info",
            ".git/modules/lib/a/hooks",
            "vendor/x/.git",
            ".claude",
        ] {
            assert!(p.readonly.contains(&ws.join(ro)), "{ro}: {:?}", p.readonly);
        }
        for rw in [
            ".git/HEAD",
            ".git/index",
            ".git/refs",
            ".git/logs",
            ".git/objects",
        ] {
            assert!(!p.readonly.contains(&ws.join(rw)), "{rw}");
        }
        assert!(!p.readonly.contains(&ws.join(".ag")), "absent: not bound");
        assert_eq!(p.pinned, [ws.join(".git"), ws.join(".git/modules/lib/a")]);
    }

    #[test]
    fn check_removes_what_the_command_created() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        std::fs::create_dir_all(ws.join(".git/objects")).unwrap();
        let p = Protected::plan(ws, &[], &[]);
        assert!(p.check().is_empty());
        std::fs::create_dir_all(ws.join(".ag")).unwrap();
        std::fs::write(ws.join(".ag/config.toml"), "model = \"evil\"").unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/hooks/pre-commit"), "#!/bin/sh").unwrap();
        std::fs::write(ws.join(".git/commondir"), "../evil").unwrap();
        std::fs::write(ws.join(".git/index"), "").unwrap();
        std::fs::create_dir_all(ws.join(".git/objects/info")).unwrap();
        std::fs::write(ws.join(".git/objects/info/alternates"), "/x").unwrap();
        std::fs::create_dir_all(ws.join("sub/.git/hooks")).unwrap();
        std::fs::write(ws.join("sub/.git/config"), "[core]\nfsmonitor = evil").unwrap();
        std::fs::write(ws.join("sub/.git/HEAD"), "ref: refs/heads/main").unwrap();
        std::fs::create_dir_all(ws.join("other")).unwrap();
        std::fs::write(ws.join("other/.git"), "gitdir: ../evil").unwrap();
        let notes = p.check();
        assert_eq!(notes.len(), 7, "{notes:#?}");
        for gone in [
            ".ag",
            ".git/hooks",
            ".git/commondir",
            ".git/objects/info",
            "sub/.git/hooks",
            "sub/.git/config",
            "other/.git",
        ] {
            assert!(!ws.join(gone).exists(), "{gone}");
        }
        for kept in [".git", ".git/index", "sub/.git/HEAD"] {
            assert!(ws.join(kept).exists(), "{kept}");
        }
    }
}
