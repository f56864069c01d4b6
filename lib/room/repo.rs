//! Which repository a worktree is, for rooms that are shared across machines: the normalised
//! URL of its `origin` remote, else its root commit; outside git (or in a repository with
//! neither), the path on this machine, which makes a room of this machine alone.

use std::path::Path;
use std::process::{Command, Stdio};

/// What a worktree room is keyed by on a shared backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// `host/path` of the `origin` remote.
    Origin(String),
    /// The repository's first commit.
    Root(String),
    /// A directory of this machine (`host:path`).
    Local(String),
}

impl Identity {
    /// The identity as one string, whose hash names the room.
    pub fn key(&self) -> String {
        match self {
            Identity::Origin(u) => format!("origin:{u}"),
            Identity::Root(c) => format!("root:{c}"),
            Identity::Local(p) => format!("local:{p}"),
        }
    }

    /// A readable slug for the room's name: the repository's last path component.
    pub fn slug_source(&self) -> &str {
        match self {
            Identity::Origin(u) => u.rsplit('/').next().unwrap_or(u),
            Identity::Root(_) | Identity::Local(_) => "",
        }
    }
}

/// The identity of the worktree whose top is `key`.
pub fn identity(key: &Path) -> Identity {
    if let Some(url) = git(key, &["config", "--get", "remote.origin.url"]) {
        if let Some(n) = normalize_url(&url) {
            return Identity::Origin(n);
        }
    }
    if let Some(roots) = git(key, &["rev-list", "--max-parents=0", "HEAD"]) {
        // A history with several roots (merged projects): the smallest is stable.
        if let Some(first) = roots.lines().map(str::trim).filter(|l| !l.is_empty()).min() {
            return Identity::Root(first.to_string());
        }
    }
    Identity::Local(format!("{}:{}", host(), key.display()))
}

/// One line of git output, or `None`. The repository is untrusted: its config cannot run a
/// command here (fsmonitor and hooks are turned off).
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !s.trim().is_empty()).then(|| s.trim().to_string())
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// `host/path` of a remote URL, the same for its https, ssh and scp-like spellings:
/// `git@github.com:Org/Repo.git`, `https://user:tok@github.com/Org/Repo`,
/// `ssh://git@github.com:22/Org/Repo.git/` all give `github.com/org/repo`. A local path
/// remote is taken as it is. Credentials in the URL never reach the result.
pub fn normalize_url(url: &str) -> Option<String> {
    let u = url.trim();
    if u.is_empty() {
        return None;
    }
    let (host, path) = if let Some((_, rest)) = u.split_once("://") {
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit('@').next().unwrap_or(authority);
        let host = host.split(':').next().unwrap_or(host);
        (host.to_string(), path.to_string())
    } else if let Some((left, path)) = u.split_once(':').filter(|(l, _)| !l.contains('/')) {
        let host = left.rsplit('@').next().unwrap_or(left);
        (host.to_string(), path.to_string())
    } else {
        (String::new(), u.to_string())
    };
    let path = path.trim_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    let joined = if host.is_empty() {
        path.to_string()
    } else {
        format!("{host}/{path}")
    };
    Some(joined.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_repository_in_every_spelling() {
        let want = Some("github.com/org/repo".to_string());
        for u in [
            "git@github.com:Org/Repo.git",
            "https://github.com/org/repo",
            "https://user:token@github.com/Org/Repo.git/",
            "ssh://git@github.com:22/org/repo.git",
            "ssh://git@github.com/org/repo",
        ] {
            assert_eq!(normalize_url(u), want, "{u}");
        }
        assert_ne!(
            normalize_url("git@github.com:org/other.git"),
            want,
            "another repository"
        );
        assert!(!normalize_url("https://me:s3cret@h.example/x")
            .unwrap()
            .contains("s3cret"));
    }
}
