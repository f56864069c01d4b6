//! `ag-room guard`: for a git pre-commit hook, the files under someone else's claim.

use super::claim::norm_all;
use super::{cwd, me, room_err};
use crate::cli::{CliError, CliResult, Ctx};
use crate::room::claims;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum GuardMode {
    Warn,
    Block,
}

#[derive(Debug, clap::Args)]
pub(crate) struct GuardArgs {
    /// Check the files staged for commit (`git diff --cached`)
    #[arg(long)]
    staged: bool,
    /// `block` exits 1 when a file is under someone else's claim; `warn` only says so
    #[arg(long, value_enum, default_value = "block")]
    mode: GuardMode,
    /// Check these paths too
    #[arg(value_name = "PATH")]
    paths: Vec<String>,
}

/// Settings that make git run a command, neutralised for every git the guard starts: the
/// repository's own `.git/config` is as untrusted as its files, and a pre-commit hook must
/// not become the way a cloned repository runs code (`core.fsmonitor` runs on every `diff`
/// that refreshes the index). `--no-ext-diff`/`--no-textconv` and `--no-pager` close the
/// diff drivers and the pager the same way.
const NEUTRAL: [&str; 7] = [
    "--no-pager",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "diff.external=",
];

fn git_paths(args: &[&str]) -> CliResult<Vec<String>> {
    let out = std::process::Command::new("git")
        .args(NEUTRAL)
        .args(args)
        .args(["--no-ext-diff", "--no-textconv"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| CliError::from(e).context("running git"))?;
    if !out.status.success() {
        return Err(CliError::msg(format!("git {} failed", args.join(" "))));
    }
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

pub(super) fn guard(ctx: &mut Ctx, from: Option<&str>, a: GuardArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let me = me(&store, from)?;
    let room = ctx.rooms().worktree(&cwd()?);
    let mut files = norm_all(&a.paths, &room)?;
    if a.staged {
        files.extend(git_paths(&["diff", "--cached", "--name-only", "-z"])?);
    } else if a.paths.is_empty() {
        files.extend(
            git_paths(&["diff", "HEAD", "--name-only", "-z"])
                .or_else(|_| git_paths(&["diff", "--cached", "--name-only", "-z"]))?,
        );
    }
    let mut warns = Vec::new();
    let active = claims::active(&store, &room, &mut |w| warns.push(w)).map_err(room_err)?;
    for w in warns {
        ctx.out.warn(&w);
    }
    let found = claims::conflicts(&active, &me.from, &files, true);
    if found.is_empty() {
        return Ok(());
    }
    for c in &found {
        let files: Vec<String> = c.overlaps.iter().map(|(f, _)| f.clone()).collect();
        ctx.out.message(&format!(
            "{} claimed by {} (intent {:?}, claim {}); {}",
            files.join(", "),
            c.claim.holder.display(),
            c.claim.intent,
            c.claim.id,
            c.claim.how_to_reach()
        ));
    }
    match a.mode {
        GuardMode::Warn => Ok(()),
        GuardMode::Block => Err(CliError::msg(format!(
            "{} file(s) are under someone else's claim; commit refused",
            found.iter().map(|c| c.overlaps.len()).sum::<usize>()
        ))
        .with_hint(
            "ask the holder (ag-room tell), wait for the release, or commit with --no-verify",
        )),
    }
}
