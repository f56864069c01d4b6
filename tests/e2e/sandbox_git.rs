//! Git's indirections from inside the sandbox: a command may commit, but nothing it writes may
//! point the user's git at a configuration or hooks of its own — not `.git/commondir`,
//! `.git/config.worktree`, `objects/info/alternates`, a `.git` file in a subfolder, nor the
//! configuration of a repository it made with `git init`. Each attack plants a
//! `core.fsmonitor` that the user's next `git status` would run; the test then runs the user's
//! git, outside the sandbox, and checks that nothing ran.

use std::process::Command;

use crate::prompt::env_with;
use crate::sandbox::{git, run_bash};

/// An `evil` git directory whose config runs `touch <marker>` on every `git status`.
fn evil_gitdir(name: &str, marker: &str) -> String {
    format!(
        "mkdir -p {name}/objects {name}/refs/heads && echo 'ref: refs/heads/main' > {name}/HEAD && \
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch $PWD/{marker}\"\\n' > {name}/config && echo planted"
    )
}

#[test]
fn sandbox_command_cannot_redirect_git_to_its_own_config_or_hooks() {
    let env = env_with(None, "");
    git(&env.cwd, &["init", "-q"]);
    env.write_file("a.txt", "one\n");
    let commondir = format!(
        "{} && echo ../evil > .git/commondir",
        evil_gitdir("evil", "pwned-commondir")
    );
    let worktree_config = "printf '[core]\\n\\tfsmonitor = \"touch $PWD/pwned-worktree\"\\n' > .git/config.worktree && echo planted";
    let alternates =
        "mkdir -p .git/objects/info && echo /tmp > .git/objects/info/alternates && echo planted";
    let gitfile = format!(
        "{} && mkdir -p other && echo 'gitdir: ../evil2' > other/.git",
        evil_gitdir("evil2", "pwned-gitfile")
    );
    let nested = "mkdir -p sub && cd sub && git init -q && git config core.fsmonitor \"touch $PWD/../pwned-nested\" && \
                  printf '#!/bin/sh\\ntouch ../pwned-hook\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo planted";
    let commit = "export GIT_CONFIG_NOSYSTEM=1 HOME=$TMPDIR; git add a.txt && \
                  git -c user.name=t -c user.email=t@e commit -qm first && git log --oneline | wc -l";
    let (_, r) = run_bash(
        &env,
        &[
            &commondir,
            worktree_config,
            alternates,
            &gitfile,
            nested,
            commit,
        ],
        &["--sandbox", "workspace-write"],
    );
    for (i, res) in r.iter().enumerate().take(5) {
        assert!(res.0.contains("planted") || res.1, "{i}: {res:?}");
    }
    assert!(
        r[0].0
            .contains(".git/commondir, which the sandbox keeps read-only; it was removed"),
        "{:?}",
        r[0]
    );
    assert!(r[4].0.contains("sub/.git/config"), "{:?}", r[4]);
    assert!(
        r[5].0.contains("1\nexit 0"),
        "a commit still works: {:?}",
        r[5]
    );
    // The user's git, outside the sandbox, in every folder the command touched.
    for dir in ["", "sub", "other"] {
        let _ = Command::new("git")
            .args(["status", "--short"])
            .current_dir(env.cwd.join(dir))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", env.dir.path())
            .output()
            .unwrap();
    }
    let _ = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ])
        .current_dir(env.cwd.join("sub"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", env.dir.path())
        .output()
        .unwrap();
    for marker in [
        "pwned-commondir",
        "pwned-worktree",
        "pwned-gitfile",
        "pwned-nested",
        "pwned-hook",
    ] {
        assert!(
            !env.cwd.join(marker).exists(),
            "{marker}: the user's git ran the command's code"
        );
    }
    for gone in [
        ".git/commondir",
        ".git/config.worktree",
        ".git/objects/info/alternates",
        "other/.git",
        "sub/.git/config",
    ] {
        assert!(!env.cwd.join(gone).exists(), "{gone} is still there");
    }
    assert!(
        env.cwd.join("sub/.git/HEAD").exists(),
        "the nested repository keeps its commits"
    );
}

/// The search for nested repositories keeps its answer between the calls of one run and reads
/// the folders again only when something changed them. Each attack comes after calls that
/// let it keep that answer: a `.git` file at the deepest level searched, a folder holding a
/// repository moved in from `$TMPDIR`, a searched folder renamed away and made again with a
/// repository in it, and a `.git` file in a folder made by the same command. Each must be
/// found and stripped as a full search finds it.
#[test]
fn a_repository_planted_after_earlier_calls_is_still_found() {
    let env = env_with(None, "");
    git(&env.cwd, &["init", "-q"]);
    for d in ["src/a/x", "src/b/y", "lib/c"] {
        std::fs::create_dir_all(env.cwd.join(d)).unwrap();
    }
    let deep = "echo 'gitdir: ../../evil' > src/a/.git && echo planted";
    let moved = "W=$PWD && cd $TMPDIR && mkdir -p m/.git/objects m/.git/refs/heads && \
                 echo 'ref: refs/heads/main' > m/.git/HEAD && \
                 printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch %s/pwned-moved\"\n' \"$W\" > m/.git/config && \
                 mv m $W/moved && echo planted";
    let replaced = format!(
        "mv lib lib.old && mkdir -p lib/c && cd lib/c && {} && mv evil .git && echo planted",
        evil_gitdir("evil", "pwned-replaced")
    );
    let fresh = "mkdir -p new/d && echo 'gitdir: /tmp' > new/d/.git && echo planted";
    let (_, r) = run_bash(
        &env,
        &["true", "ls src", deep, "true", moved, &replaced, fresh],
        &["--sandbox", "workspace-write"],
    );
    for (i, res) in r.iter().enumerate().skip(2) {
        assert!(res.0.contains("exit 0"), "{i}: {res:?}");
    }
    assert!(
        r[2].0.contains("src/a/.git, which the sandbox"),
        "{:?}",
        r[2]
    );
    assert!(r[4].0.contains("moved/.git/config"), "{:?}", r[4]);
    assert!(r[5].0.contains("lib/c/.git/config"), "{:?}", r[5]);
    assert!(
        r[6].0.contains("new/d/.git, which the sandbox"),
        "{:?}",
        r[6]
    );
    for gone in [
        "src/a/.git",
        "moved/.git/config",
        "lib/c/.git/config",
        "new/d/.git",
    ] {
        assert!(!env.cwd.join(gone).exists(), "{gone} is still there");
    }
    for dir in ["moved", "lib/c"] {
        let _ = Command::new("git")
            .args(["status", "--short"])
            .current_dir(env.cwd.join(dir))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", env.dir.path())
            .output()
            .unwrap();
    }
    for marker in ["pwned-moved", "pwned-replaced"] {
        let found = walk_for(&env.cwd, marker);
        assert!(
            found.is_empty(),
            "the user's git ran the command's code: {found:?}"
        );
    }
}

/// Every path below `dir` whose name is `name`.
fn walk_for(dir: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_name() == name {
            out.push(p.clone());
        }
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk_for(&p, name));
        }
    }
    out
}
