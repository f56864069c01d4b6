//! Which repository a worktree is, for rooms that are shared across machines: the normalised
//! URL of its `origin` remote, else its root commit; outside git (or in a repository with
//! neither), the path on this machine, which makes a room of this machine alone.

use std::path::Path;
use std::process::{Command, Stdio};

/// What a worktree room is keyed by on a shared backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Identity {
    /// `host/path` of the `origin` remote.
    Origin(String),
    /// The repository's first commit.
    Root(String),
    /// A directory of this machine (`host:path`).
    Local(String),
}

impl Identity {
    /// The identity as one string, whose hash names the room.
    pub(crate) fn key(&self) -> String {
        match self {
            Identity::Origin(u) => format!("origin:{u}"),
            Identity::Root(c) => format!("root:{c}"),
            Identity::Local(p) => format!("local:{p}"),
        }
    }

    /// A readable slug for the room's name: the repository's last path component.
    pub(crate) fn slug_source(&self) -> &str {
        match self {
            Identity::Origin(u) => u.rsplit('/').next().unwrap_or(u),
            Identity::Root(_) | Identity::Local(_) => "",
        }
    }
}

/// The identity of the worktree whose top is `key`.
pub(crate) fn identity(key: &Path) -> Identity {
    let origin =
        origin_from_config(key).or_else(|| git(key, &["config", "--get", "remote.origin.url"]));
    if let Some(url) = origin {
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

/// The `origin` URL read straight from the repository's own config file, without starting
/// git (which is most of what naming a room on a shared backend costs). `None` when only git
/// can tell: no origin in that file (the user's config might name one), an include, the old
/// `[remote.origin]` spelling, a quoted or escaped value, a per-worktree config, an
/// unreadable file.
fn origin_from_config(top: &Path) -> Option<String> {
    // The environment can point git elsewhere or add config of its own.
    if std::env::vars_os().any(|(k, _)| {
        let k = k.to_string_lossy();
        k == "GIT_DIR" || k == "GIT_COMMON_DIR" || k.starts_with("GIT_CONFIG")
    }) {
        return None;
    }
    let config = std::fs::read_to_string(common_dir(top)?.join("config")).ok()?;
    let mut in_origin = false;
    let mut url = None;
    for line in config.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix('[') {
            let header = rest.split(']').next()?.trim();
            let (section, sub) = header
                .split_once(char::is_whitespace)
                .unwrap_or((header, ""));
            let section = section.to_ascii_lowercase();
            if section.starts_with("include") || section.starts_with("remote.") {
                return None;
            }
            in_origin = section == "remote" && sub.trim() == "\"origin\"";
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if in_origin && key.trim().eq_ignore_ascii_case("url") {
            let value = value.trim();
            if value.is_empty() || value.contains(['\\', '"', ';', '#']) {
                return None;
            }
            url = Some(value.to_string());
        }
    }
    url
}

/// The directory holding the repository's shared `config` for the worktree whose top is
/// `top`: `.git` itself, or what a `.git` file points to (its `commondir` for a linked
/// worktree). `None` for a layout only git should read (a per-worktree config).
fn common_dir(top: &Path) -> Option<std::path::PathBuf> {
    let dot = top.join(".git");
    let meta = std::fs::symlink_metadata(&dot).ok()?;
    if meta.is_dir() {
        return Some(dot);
    }
    let text = std::fs::read_to_string(&dot).ok()?;
    let gitdir = top.join(text.strip_prefix("gitdir:")?.trim());
    if gitdir.join("config.worktree").exists() {
        return None;
    }
    match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(c) => Some(gitdir.join(c.trim())),
        Err(_) => Some(gitdir),
    }
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
pub(crate) fn normalize_url(url: &str) -> Option<String> {
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

    fn run_git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    /// What the config file says, next to what git says, for the spellings read directly;
    /// the rest are left to git.
    #[test]
    fn the_origin_read_from_the_file_is_what_git_reads() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().join("repo");
        std::fs::create_dir(&top).unwrap();
        run_git(&top, &["init", "-q"]);
        let config = top.join(".git/config");
        let base = std::fs::read_to_string(&config).unwrap();
        let from_git = || git(&top, &["config", "--get", "remote.origin.url"]);
        let cases = [
            ("[remote \"origin\"]\n\turl = git@h.example:o/r.git\n", true),
            ("[Remote \"origin\"]\n  URL=https://h.example/o/r\n", true),
            ("[remote \"origin\"]\n\turl = a:x\n\turl = b:y\n", true),
            (
                "[remote \"upstream\"]\n\turl = a:x\n[remote \"origin\"]\nurl = c:z\n",
                true,
            ),
            ("[remote \"Origin\"]\n\turl = a:x\n", false),
            ("[remote \"origin\"]\n\turl = \"a:x\"\n", false),
            ("[remote.origin]\n\turl = a:x\n", false),
            (
                "[include]\n\tpath = other\n[remote \"origin\"]\n\turl = a:x\n",
                false,
            ),
        ];
        for (extra, read_directly) in cases {
            std::fs::write(&config, format!("{base}{extra}")).unwrap();
            let direct = origin_from_config(&top);
            assert_eq!(direct.is_some(), read_directly, "{extra:?}");
            if direct.is_some() {
                assert_eq!(direct, from_git(), "{extra:?}");
            }
        }

        // A linked worktree reads the repository's shared config.
        std::fs::write(&config, format!("{base}[remote \"origin\"]\n\turl = a:x\n")).unwrap();
        run_git(
            &top,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
        );
        let linked = t.path().join("linked");
        run_git(&top, &["worktree", "add", "-q", linked.to_str().unwrap()]);
        assert_eq!(origin_from_config(&linked).as_deref(), Some("a:x"));
        assert_eq!(identity(&linked), identity(&top));
    }

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
