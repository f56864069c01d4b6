//! What a command may not change and what it changed under other sessions' claims: the
//! existing paths their exclusive claims name, which the `bash` sandbox binds read-only, and
//! the files the claims name (size, modification time, inode), taken before a `bash` call and
//! after it, and compared.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::claims::{self, Claim};

/// Files looked at in one snapshot, at most.
const FILE_LIMIT: usize = 20_000;

/// The claimed files of a worktree and their state, by path relative to its top.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Snapshot(BTreeMap<String, (u64, i64, i64, u64)>);

/// The state of every file under the paths of `held` (globs, directories or files).
pub(crate) fn snapshot(key: &Path, held: &[Claim]) -> Snapshot {
    use std::os::unix::fs::MetadataExt;
    let mut files = BTreeMap::new();
    let mut budget = FILE_LIMIT;
    for pattern in held.iter().flat_map(|c| &c.paths) {
        claims::walk_files(
            key.join(claims::literal_dir(pattern)),
            &mut budget,
            &mut |p, m| {
                let Ok(rel) = p.strip_prefix(key) else {
                    return;
                };
                let rel = rel.to_string_lossy().into_owned();
                if claims::overlaps(pattern, &rel) {
                    files.insert(rel, (m.len(), m.mtime(), m.mtime_nsec(), m.ino()));
                }
            },
        );
    }
    Snapshot(files)
}

/// Paths bound read-only at most for one call; a glob that matches more is bound as its
/// literal directory instead (stricter, never looser).
const READ_ONLY_LIMIT: usize = 2_000;

/// The existing paths (canonical, inside the worktree `key`) that the exclusive claims of
/// `held` name, expanded now: a literal claim is its file or directory (a directory covers
/// what is created in it later too); a glob is the files it matches now, or its literal
/// directory when it matches more than [`READ_ONLY_LIMIT`]. A file a glob would match but that
/// does not exist yet cannot be bound; the comparison after the call reports it.
pub(crate) fn read_only_paths(key: &Path, held: &[Claim]) -> Vec<PathBuf> {
    let mut out = BTreeSet::new();
    let mut inside = |p: &Path| {
        if let Ok(c) = std::fs::canonicalize(p) {
            if c.starts_with(key) {
                out.insert(c);
            }
        }
    };
    for pattern in held.iter().filter(|c| c.exclusive()).flat_map(|c| &c.paths) {
        let dir = key.join(claims::literal_dir(pattern));
        if !claims::is_glob(pattern) {
            inside(&dir);
            continue;
        }
        let mut budget = READ_ONLY_LIMIT * 4;
        let mut matched = Vec::new();
        claims::walk_files(dir.clone(), &mut budget, &mut |p, _| {
            if let Ok(rel) = p.strip_prefix(key) {
                if claims::glob_match(pattern, &rel.to_string_lossy()) {
                    matched.push(p.to_path_buf());
                }
            }
        });
        if budget == 0 || matched.len() > READ_ONLY_LIMIT {
            inside(&dir);
        } else {
            matched.iter().for_each(|p| inside(p));
        }
    }
    // A path under a directory already bound needs no bind of its own.
    let all: Vec<PathBuf> = out.into_iter().collect();
    all.iter()
        .filter(|p| !all.iter().any(|d| d != *p && p.starts_with(d)))
        .cloned()
        .collect()
}

/// The files that appeared, went away or changed between two snapshots.
pub(crate) fn changed(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut out: Vec<String> = before
        .0
        .iter()
        .filter(|(p, st)| after.0.get(*p) != Some(*st))
        .map(|(p, _)| p.clone())
        .collect();
    out.extend(
        after
            .0
            .keys()
            .filter(|p| !before.0.contains_key(*p))
            .cloned(),
    );
    out.sort();
    out
}

/// The claims that cover a path.
pub(crate) fn covering<'a>(held: &'a [Claim], path: &str) -> Vec<&'a Claim> {
    held.iter()
        .filter(|c| c.paths.iter().any(|p| claims::overlaps(p, path)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::room::From;

    fn claim(paths: &[&str], mode: &str) -> Claim {
        Claim {
            id: "c".into(),
            holder: From {
                session: None,
                handle: None,
                name: "pat".into(),
                pid: None,
                kind: "human".into(),
            },
            paths: paths.iter().map(|p| p.to_string()).collect(),
            intent: String::new(),
            mode: mode.into(),
            ttl_s: 60,
            ts: String::new(),
            expires_ms: i64::MAX,
            holder_state: None,
        }
    }

    #[test]
    fn read_only_paths_expand_claims_to_what_exists_inside_the_worktree() {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let key = base.join("w");
        for f in [
            "src/a.rs",
            "src/b.rs",
            "src/c.txt",
            "docs/x/y.md",
            "lib/l.rs",
        ] {
            let p = key.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        std::fs::write(base.join("outside.rs"), "").unwrap();
        std::os::unix::fs::symlink(base.join("outside.rs"), key.join("src/out.rs")).unwrap();
        let held = [
            claim(
                &["src/*.rs", "docs", "docs/x/y.md", "missing.rs"],
                "exclusive",
            ),
            claim(&["lib/l.rs"], "shared"),
        ];
        assert_eq!(
            read_only_paths(&key, &held),
            [key.join("docs"), key.join("src/a.rs"), key.join("src/b.rs")],
            "globs to the files they match, directories whole, nothing outside or shared"
        );
    }
}
