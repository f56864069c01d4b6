//! Session verbs: `ls`, `title`, `rm` (`show` has its own file).

use serde_json::Value;

use crate::cli::{escape_controls, CliError, CliResult, Ctx};
use crate::clock;
use crate::store::Session;
use crate::summon::remove;

#[derive(Debug, clap::Args)]
pub(crate) struct LsArgs {
    /// At most N sessions, most recently updated first
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(..=i64::MAX as u64))]
    limit: Option<u64>,
    /// Only this directory's sessions
    #[arg(long)]
    here: bool,
    /// Only sessions of this kind
    #[arg(long, value_name = "KIND", value_parser = ["chat", "side", "subagent", "user_agent"])]
    kind: Option<String>,
    /// Only sessions updated since then: a duration back from now (`2h`, `3 days`, `1w`) or a
    /// date or time (`2026-11-30`, `2026-11-30T09:00:00Z`)
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    since: Option<i64>,
}

/// `--since`: unix ms.
fn parse_since(s: &str) -> Result<i64, String> {
    crate::clock::parse_since(s, crate::clock::now_ms())
}

pub(crate) fn session_json(s: &Session, chunks: i64) -> Value {
    let mut v = s.json_fields();
    v["handle"] = s.handle.clone().into();
    v["pid"] = s.pid.into();
    v["chunks"] = chunks.into();
    v["created"] = clock::iso(s.created_at).into();
    v["updated"] = clock::iso(s.updated_at).into();
    v
}

pub(crate) fn ls(ctx: &mut Ctx, args: LsArgs) -> CliResult<()> {
    let store = ctx.read_store()?;
    let cwd = std::env::current_dir().and_then(std::fs::canonicalize)?;
    let sessions = store.list_sessions_where(&crate::store::Listing {
        limit: args.limit,
        cwd: args.here.then(|| cwd.to_string_lossy().into_owned()),
        kind: args.kind.as_deref().map(crate::store::SessionKind::parse),
        since_ms: args.since,
    })?;
    if ctx.global.quiet {
        for (s, _) in &sessions {
            ctx.out.line(&s.id)?;
        }
        return Ok(());
    }
    if ctx.global.json {
        for (s, n) in &sessions {
            ctx.out.line(&session_json(s, *n).to_string())?;
        }
        return Ok(());
    }
    if sessions.is_empty() {
        let filtered = args.here || args.kind.is_some() || args.since.is_some();
        ctx.out.note(if filtered {
            "no sessions match"
        } else {
            "no sessions yet; start one with: ag-log append --new 'hello'"
        });
        return Ok(());
    }
    let now = clock::now_ms();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let rows = sessions
        .iter()
        .map(|(s, n)| {
            vec![
                s.handle.clone(),
                s.title.clone(),
                s.kind.as_str().into(),
                n.to_string(),
                s.status.as_str().into(),
                format!("{} ago", clock::age(s.updated_at, now)),
                s.cwd
                    .as_deref()
                    .map_or("-".into(), |d| dir_label(d, &cwd, home.as_deref())),
            ]
        })
        .collect();
    let header = ["ID", "TITLE", "KIND", "CHUNKS", "STATUS", "UPDATED", "DIR"];
    crate::cli::table::print(&mut ctx.out, &header, rows)?;
    Ok(())
}

/// A session's directory for a table: `.` for this one, `./sub` below it, `~/…` under home.
fn dir_label(dir: &str, cwd: &std::path::Path, home: Option<&std::path::Path>) -> String {
    let d = std::path::Path::new(dir);
    if d == cwd {
        return ".".into();
    }
    if let Ok(rest) = d.strip_prefix(cwd) {
        return format!("./{}", rest.display());
    }
    match home.and_then(|h| d.strip_prefix(h).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => dir.to_string(),
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct TitleArgs {
    /// The session: a handle, an id or prefix, a title, `last` (this directory's latest chat) or `last~N`
    #[arg(value_name = "SESSION")]
    session: String,
    /// The new title
    #[arg(value_name = "TITLE")]
    title: String,
}

pub(crate) fn title(ctx: &mut Ctx, args: TitleArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let s = store.resolve(&args.session)?;
    crate::record::retitle(&store, &s, &args.title)?;
    ctx.out.note(&format!("{}: {}", s.id, args.title));
    Ok(())
}

#[derive(Debug, clap::Args)]
pub(crate) struct RmArgs {
    /// Sessions to remove: handles, ids or prefixes, titles, `last`
    #[arg(value_name = "SESSION", required = true, num_args = 1..)]
    sessions: Vec<String>,
    /// Also remove the sessions forked from these (recursively), and cancel their running
    /// subagents first
    #[arg(long)]
    cascade: bool,
    /// Do not ask (on a terminal, rm asks before it removes anything; a script is never asked)
    #[arg(short, long)]
    force: bool,
}

pub(crate) fn rm(ctx: &mut Ctx, args: RmArgs) -> CliResult<()> {
    let store = ctx.store()?;
    // Resolve everything first so a typo removes nothing.
    let targets: Vec<Session> = args
        .sessions
        .iter()
        .map(|r| store.resolve(r))
        .collect::<Result<_, _>>()?;
    let removal = match remove::check(&store, &targets, args.cascade) {
        Ok(r) => r,
        Err(remove::RemoveError::Store(e)) => return Err(e.into()),
        Err(e @ remove::RemoveError::RunningSubagents { .. }) => {
            return Err(
                CliError::new(crate::cli::Exit::Conflict, e.to_string()).with_hint(
                    "wait for them (`ag-summon retrieve`), or `--cascade` cancels them first",
                ),
            )
        }
    };
    if !args.force && !confirm(ctx, &targets, args.cascade)? {
        return Err(CliError::msg("nothing was removed").with_hint("-f removes without asking"));
    }
    let out = &mut ctx.out;
    remove::remove(&store, removal, &targets, args.cascade, &mut |r| match r {
        remove::Removed::Cancelled { id, status } => {
            out.note(&format!("cancelled {id} ({})", status.as_str()))
        }
        remove::Removed::Gone(id) => out.note(&format!("removed {id}")),
    })
    .map_err(|e| match e {
        remove::RemoveError::Store(e) => CliError::from(e),
        e => CliError::msg(e.to_string()),
    })
}

/// On a terminal (stdin and stderr both), ask before removing; anywhere else, never ask.
fn confirm(ctx: &Ctx, targets: &[Session], cascade: bool) -> CliResult<bool> {
    use std::io::{BufRead, IsTerminal};
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Ok(true);
    }
    let names: Vec<String> = targets
        .iter()
        .map(|s| {
            format!(
                "{} ({})",
                s.handle,
                escape_controls(&super::render::clip(&s.title, 40), false)
            )
        })
        .collect();
    let forks = if cascade { " and their forks" } else { "" };
    ctx.out
        .ask(&format!("remove {}{forks}? [y/N] ", names.join(", ")));
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes" | "Yes"))
}
