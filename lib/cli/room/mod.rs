//! `ag-room`: rooms, direct messages, presence, receipts and file claims (DESIGN §6).
//!
//! One file per verb group, each with its flags and its `run`: `tell` (post, wait for delivery),
//! `who` (presence and peek), `tail` (print and follow a room), `inbox` (inbox, status, ack),
//! `claim` (claim, release, claims), `guard` (the pre-commit check), `mcp` (the room as an MCP
//! server). This file holds the
//! command, the dispatch and the helpers they share.

mod claim;
mod guard;
mod inbox;
mod mcp;
mod tail;
mod tell;
mod who;

#[cfg(test)]
mod tests;

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use super::{finish, CliError, CliResult, Ctx, Exit, GlobalArgs};
use crate::room::presence::Me;
use crate::room::target::{self, Resolved};
use crate::room::RoomError;
use crate::store::{Session, Store};

pub(crate) use claim::{ClaimArgs, ReleaseArgs};
pub(crate) use guard::GuardArgs;
pub(crate) use inbox::InboxArgs;
pub(crate) use mcp::McpArgs;
pub(crate) use tail::TailArgs;
pub(crate) use tell::TellArgs;
pub(crate) use who::PeekArgs;

const EXAMPLES: &str = "\
Examples:
  ag-room tell 'I am refactoring lib/store; please hold off'   # to everyone in this worktree
  ag-room tell --to 0192f3a1 --wait=30 'done with schema.rs?'  # a direct message, wait for delivery
  ag-room who                                                   # the live sessions here
  ag-room tail -f                                               # follow the room
  ag-room claim 'lib/store/**' --intent 'schema migration' --ttl 45m
  ag-room guard --staged --mode block                           # in .git/hooks/pre-commit
  git log -1 --format=%s | ag-room tell -q --from post-commit - # from a git hook
  claude mcp add ag-room -- ag-room mcp                         # Claude Code joins the room
  ag-room doctor                                                # where rooms live, and whether it answers

Rooms are files on this machine unless `[rooms] url = \"nats://HOST:4222\"` in the user config
(or AG_ROOM_URL) puts them on a NATS JetStream server shared by several machines.";

#[derive(Debug, Parser)]
#[command(
    name = "ag-room",
    version,
    about = "Rooms where sessions, people, cron jobs and git hooks talk: messages, presence, receipts, file claims",
    after_help = EXAMPLES
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    #[command(flatten)]
    pub(crate) speaker: Speaker,
    #[command(subcommand)]
    pub(crate) verb: Verb,
}

/// `--from`, which every verb takes.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Speaker {
    /// Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME,
    /// else the user name]
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) from: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Verb {
    /// Post a line to this worktree's room, or a direct message; prints the message id
    Tell(TellArgs),
    /// The live sessions in this worktree: handle, title, goal, status, directory, last tool,
    /// last words, age
    Who,
    /// What a session is doing: goal, last prompt, last tool calls, last words, and the peer
    /// lines it heard and said; consumes nothing. Of a session of another machine (shared
    /// rooms): what its presence says and the lines it said in the room; what it heard is
    /// kept on its own machine
    Peek(PeekArgs),
    /// The room's lines; -f follows
    Tail(TailArgs),
    /// Unread lines since your cursor; consuming unless --peek
    Inbox(InboxArgs),
    /// What happened to a message: posted, delivered (to whom, when), acked
    Status {
        /// The message id (or a unique prefix of at least 8 characters)
        #[arg(value_name = "MSG")]
        msg: String,
    },
    /// Acknowledge a message
    Ack {
        #[arg(value_name = "MSG")]
        msg: String,
    },
    /// Claim paths (globs) before changing them; exit 3 when someone else holds them
    Claim(ClaimArgs),
    /// End your own claims
    Release(ReleaseArgs),
    /// The active claims in this worktree; a holder between turns shows as (idle)
    Claims,
    /// For a git pre-commit hook: files under someone else's claim
    Guard(GuardArgs),
    /// Serve this worktree's room over MCP on stdio, for Claude Code, Codex, Cursor…:
    /// peer_message, peer_inbox, peer_who, peer_peek, peer_claim, peer_release
    Mcp(McpArgs),
    /// Check where rooms live: the configuration, the connection, the stream and the buckets,
    /// one line each; exit 75 when the room server cannot be reached, 1 when something else
    /// is wrong
    Doctor,
}

pub fn command() -> clap::Command {
    Cli::command()
}

/// `ag-room` as `ag` runs it: every verb, on rooms in files or on a room server.
pub fn main() -> ExitCode {
    let cli = parse();
    let ctx = match Ctx::new(cli.global.clone()) {
        Ok(ctx) => ctx,
        Err(e) => return finish("ag-room", Err(e)),
    };
    finish("ag-room", run(ctx, cli, mcp::mcp))
}

/// The installed `ag-room`: a program of its own, because hooks, cron jobs and agents start it
/// for every line they post. It runs every verb on rooms kept in files. The room server's
/// client and the MCP server are left out of it (they were half of what every start loaded
/// and relocated): for rooms on a server, and for `ag-room mcp`, it runs `ag` as `ag-room`,
/// with the same arguments, before it reads anything (docs/decisions.md, "`ag-room` on
/// files").
pub fn main_on_files() -> ExitCode {
    let cli = parse();
    if matches!(cli.verb, Verb::Mcp(_)) {
        return super::launch::exec("ag-room");
    }
    let ctx = match Ctx::new(cli.global.clone()) {
        Ok(ctx) => ctx,
        Err(e) => return finish("ag-room", Err(e)),
    };
    // The configuration says where rooms live; one that does not read is reported by the
    // verb that needs it, as `ag` would.
    let here = std::env::current_dir().unwrap_or_default();
    if let Ok(config) = crate::config::Config::load(&here) {
        if matches!(crate::config::rooms::server(&config), Ok(Some(_))) {
            drop(ctx);
            return super::launch::exec("ag-room");
        }
        ctx.adopt_config(config);
    }
    finish(
        "ag-room",
        run(ctx, cli, |_, _, _| Err(on_files_only("mcp"))),
    )
}

/// What the installed `ag-room` says of a verb it hands to `ag` (it never gets that far).
fn on_files_only(verb: &str) -> CliError {
    CliError::msg(format!(
        "`ag-room {verb}` runs in `ag`: run `ag room {verb}`"
    ))
}

/// The command line, parsed with only the verb it names: building every verb's flags, and
/// copying the global flags into each, was most of what `ag-room tell` did before it wrote its
/// line. Help, versions, `status`, `ack` and anything the narrow parse refuses go to the whole
/// command ([`super::parse_narrowed`]).
fn parse() -> Cli {
    super::parse_narrowed("ag-room", narrow)
}

/// [`parse`]'s narrow parse: the global flags, `--from` and the one verb `argv` names.
fn narrow(argv: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::{Args, FromArgMatches};
    if argv.iter().any(|a| {
        matches!(
            a.to_str(),
            Some("-h" | "--help" | "-V" | "--version" | "help")
        )
    }) {
        return None;
    }
    // The verb is the first word that is neither a flag nor a global flag's value.
    let mut words = argv.iter().skip(1).map(|a| a.to_str());
    let name = loop {
        match words.next()?? {
            "--home" | "--color" | "--from" => {
                words.next()?;
            }
            w if w.starts_with('-') => {}
            w => break w,
        }
    };
    let verb = match name {
        "tell" => TellArgs::augment_args(clap::Command::new("tell")),
        "peek" => PeekArgs::augment_args(clap::Command::new("peek")),
        "tail" => TailArgs::augment_args(clap::Command::new("tail")),
        "inbox" => InboxArgs::augment_args(clap::Command::new("inbox")),
        "claim" => ClaimArgs::augment_args(clap::Command::new("claim")),
        "release" => ReleaseArgs::augment_args(clap::Command::new("release")),
        "guard" => GuardArgs::augment_args(clap::Command::new("guard")),
        "mcp" => McpArgs::augment_args(clap::Command::new("mcp")),
        "who" => clap::Command::new("who"),
        "claims" => clap::Command::new("claims"),
        "doctor" => clap::Command::new("doctor"),
        _ => return None,
    };
    let cmd = Speaker::augment_args(GlobalArgs::augment_args(clap::Command::new("ag-room")))
        .subcommand(verb)
        .subcommand_required(true);
    let matches = cmd.try_get_matches_from(argv).ok()?;
    Cli::from_arg_matches(&matches).ok()
}

fn run(
    mut ctx: Ctx,
    cli: Cli,
    mcp: fn(&mut Ctx, Option<&str>, McpArgs) -> CliResult<()>,
) -> CliResult<()> {
    let from = cli.speaker.from.clone();
    let result = match cli.verb {
        Verb::Tell(a) => tell::tell(&mut ctx, from.as_deref(), a),
        Verb::Who => who::who(&mut ctx),
        Verb::Peek(a) => who::peek(&mut ctx, a),
        Verb::Tail(a) => tail::tail(&mut ctx, from.as_deref(), a),
        Verb::Inbox(a) => inbox::inbox_cmd(&mut ctx, from.as_deref(), a),
        Verb::Status { msg } => inbox::status(&mut ctx, &msg),
        Verb::Ack { msg } => inbox::ack(&mut ctx, from.as_deref(), &msg),
        Verb::Claim(a) => claim::claim(&mut ctx, from.as_deref(), a),
        Verb::Release(a) => claim::release(&mut ctx, from.as_deref(), a),
        Verb::Claims => claim::list_claims(&mut ctx),
        Verb::Guard(a) => guard::guard(&mut ctx, from.as_deref(), a),
        Verb::Mcp(a) => mcp(&mut ctx, from.as_deref(), a),
        Verb::Doctor => doctor(&mut ctx),
    };
    ctx.conclude(result)
}

/// `ag-room doctor`: one line a check, `ok` or `FAIL`.
fn doctor(ctx: &mut Ctx) -> CliResult<()> {
    use crate::room::backend::CheckState;
    let checks = ctx.rooms().backend().doctor();
    for c in &checks {
        let mark = if c.state == CheckState::Ok {
            "ok  "
        } else {
            "FAIL"
        };
        ctx.out.line(&crate::cli::escape_controls(
            &format!("{mark} {}", c.text),
            false,
        ))?;
    }
    let unreachable = checks.iter().any(|c| c.state == CheckState::Unreachable);
    match checks.iter().filter(|c| c.state != CheckState::Ok).count() {
        0 => Ok(()),
        n if unreachable => Err(CliError::new(
            Exit::TempFail,
            format!("{n} check(s) failed: the room server cannot be reached"),
        )),
        n => Err(CliError::msg(format!("{n} check(s) failed"))),
    }
}

pub(super) fn room_err(e: RoomError) -> CliError {
    match e {
        RoomError::Store(s) => CliError::from(s),
        RoomError::TooLong { .. } => CliError::usage(e.to_string()),
        RoomError::Unavailable(_) => CliError::new(Exit::TempFail, e.to_string())
            .with_hint("nothing was written; try again when the room server is back (`ag-room doctor` checks it)"),
        RoomError::Config(_) => CliError::msg(e.to_string())
            .with_hint("`[rooms]` in the user config (or AG_ROOM_URL) says where rooms live; `ag-room doctor` checks it"),
        // The path, then what the system said about it.
        e @ RoomError::Io { .. } => CliError::cause(e),
        e => CliError::msg(e.to_string()),
    }
}

pub(super) fn cwd() -> CliResult<PathBuf> {
    let c = std::env::current_dir()?;
    Ok(std::fs::canonicalize(&c).unwrap_or(c))
}

pub(super) fn warner(ctx: &Ctx) -> impl FnMut(String) + '_ {
    move |w| ctx.out.warn(&w)
}

/// The speaker: the session in AG_SESSION, else --from / AG_NAME / the user. Who speaks is
/// the command's to say (its environment, its terminal); the room layer takes the answer.
pub(super) fn me(store: &Store, from: Option<&str>) -> CliResult<Me> {
    if let Some(id) = session_env() {
        if let Ok(s) = store.session(id.trim()) {
            return Ok(Me::session(&s));
        }
    }
    Ok(named(from))
}

/// `AG_SESSION`, when set: who speaks is then looked up in the store.
pub(super) fn session_env() -> Option<String> {
    std::env::var("AG_SESSION")
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// Who speaks when no session does: `--from`, else `AG_NAME`, `USER`, `LOGNAME`, else
/// `user`; a `human` when stdin is a terminal and a `tool` otherwise (a hook, a cron job, a
/// pipe). Needs no store.
pub(super) fn named(from: Option<&str>) -> Me {
    use std::io::IsTerminal;
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let name = from
        .map(str::to_string)
        .filter(|s| !s.trim().is_empty())
        .or_else(|| env("AG_NAME"))
        .or_else(|| env("USER"))
        .or_else(|| env("LOGNAME"))
        .unwrap_or_else(|| "user".into());
    let kind = if std::io::stdin().is_terminal() {
        "human"
    } else {
        "tool"
    };
    Me::named(name.trim(), kind)
}

pub(super) fn resolve(rooms: &crate::room::Rooms, store: &Store, t: &str) -> CliResult<Session> {
    match target::resolve(rooms, store, t)? {
        Resolved::One(s) => Ok(*s),
        Resolved::None => Err(CliError::new(Exit::NotFound, format!("no session matches {t:?}"))
            .with_hint("`ag-room who` lists the live sessions here; a target is an id, a unique id prefix, a pid, or a unique fragment of a title or goal")),
        Resolved::Ambiguous(c) => Err(ambiguous(t, &c)),
        Resolved::Everyone => Err(everyone()),
    }
}

/// `--to all` and the like: refused with the sentence that explains room versus direct message.
pub(super) fn everyone() -> CliError {
    CliError::usage(target::EVERYONE.to_string())
        .with_hint("`ag-room tell TEXT` without --to speaks to this worktree's room")
}

pub(super) fn ambiguous(t: &str, c: &[(String, String)]) -> CliError {
    let mut h = String::from("be more specific; candidates:");
    for (id, title) in c {
        h.push_str(&format!("\n  {id}  {title}"));
    }
    CliError::usage(format!("{t:?} matches {} sessions", c.len())).with_hint(h)
}

pub(super) fn read_text(t: &str) -> CliResult<String> {
    let text = if t == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CliError::from(e).context("reading the text from stdin"))?;
        s
    } else {
        t.to_string()
    };
    let text = text.trim_end_matches(['\n', '\r']).to_string();
    if text.trim().is_empty() {
        return Err(CliError::usage("the text is empty"));
    }
    Ok(text)
}
