//! What a command changed under other sessions' claims: the files the claims name (size,
//! modification time, inode), taken before a `bash` call and after it, and compared.

use std::collections::BTreeMap;
use std::path::Path;

use super::claims::{self, Claim};

/// Files looked at in one snapshot, at most.
const FILE_LIMIT: usize = 20_000;

/// The claimed files of a worktree and their state, by path relative to its top.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Snapshot(BTreeMap<String, (u64, i64, i64, u64)>);

/// The state of every file under the paths of `held` (globs, directories or files).
pub fn snapshot(key: &Path, held: &[Claim]) -> Snapshot {
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

/// The files that appeared, went away or changed between two snapshots.
pub fn changed(before: &Snapshot, after: &Snapshot) -> Vec<String> {
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
pub fn covering<'a>(held: &'a [Claim], path: &str) -> Vec<&'a Claim> {
    held.iter()
        .filter(|c| c.paths.iter().any(|p| claims::overlaps(p, path)))
        .collect()
}
