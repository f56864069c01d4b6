//! `ag-room`: rooms, direct messages, presence, receipts and file claims (DESIGN §6).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{CommandFactory, Parser, Subcommand};
use serde_json::json;

use super::{escape_controls, finish, CliError, CliResult, Ctx, Exit, GlobalArgs};
use crate::room::claims::{self, Claim, Outcome};
use crate::room::file::{self, Flow};
use crate::room::inbox::{self, Heard};
use crate::room::presence::{self, Me};
use crate::room::target::{self, Resolved};
use crate::room::{Line, Room, RoomError};
use crate::store::{Session, Store};

const EXAMPLES: &str = "\
Examples:
  ag-room tell 'I am refactoring lib/store; please hold off'   # to everyone in this worktree
  ag-room tell --to 0192f3a1 --wait=30 'done with schema.rs?'  # a direct message, wait for delivery
  ag-room who                                                   # the live sessions here
  ag-room tail -f                                               # follow the room
  ag-room claim 'lib/store/**' --intent 'schema migration' --ttl 45m
  ag-room guard --staged --mode block                           # in .git/hooks/pre-commit
  git log -1 --format=%s | ag-room tell --from post-commit -    # from a git hook";

#[derive(Debug, Parser)]
#[command(
    name = "ag-room",
    version,
    about = "Rooms where sessions, people, cron jobs and git hooks talk: messages, presence, receipts, file claims",
    after_help = EXAMPLES
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// Speak as NAME (a person or script) [default: the session in AG_SESSION, else AG_NAME,
    /// else the user name]
    #[arg(long, global = true, value_name = "NAME")]
    pub from: Option<String>,
    #[command(subcommand)]
    pub verb: Verb,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Post a line to this worktree's room, or a direct message; prints the message id
    Tell(TellArgs),
    /// The live sessions in this worktree: id, title, goal, status, last tool, last words, age
    Who,
    /// What a session is doing: goal, last prompt, last tool calls, last words; consumes nothing
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
    /// The active claims in this worktree
    Claims,
    /// For a git pre-commit hook: files under someone else's claim
    Guard(GuardArgs),
}

#[derive(Debug, clap::Args)]
pub struct TellArgs {
    /// The text (`-` reads it from stdin)
    #[arg(value_name = "TEXT")]
    text: String,
    /// A direct message to this session: id, unique id prefix, pid, or a unique fragment of its
    /// title or goal
    #[arg(long, value_name = "TARGET")]
    to: Option<String>,
    /// The message this answers
    #[arg(long, value_name = "MSG")]
    reply_to: Option<String>,
    /// Send through the device room (direct messages across folders; needs --to)
    #[arg(long)]
    device: bool,
    /// Wait until the line is delivered (exit 0) or SECS pass (exit 75) [default: 60]
    #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "60", require_equals = true)]
    wait: Option<f64>,
}

#[derive(Debug, clap::Args)]
pub struct PeekArgs {
    #[arg(value_name = "TARGET")]
    target: String,
    /// How many tool calls and texts to show
    #[arg(short = 'n', long, default_value_t = 3)]
    n: usize,
}

#[derive(Debug, clap::Args)]
pub struct TailArgs {
    /// Keep following the room
    #[arg(short, long)]
    follow: bool,
    /// Start with the last N lines [default: all; with -f: 10]
    #[arg(short = 'n', long, value_name = "N")]
    lines: Option<usize>,
    /// Show every line: direct messages between others and receipts too
    #[arg(long)]
    all: bool,
}

#[derive(Debug, clap::Args)]
pub struct InboxArgs {
    /// Read as this session (target) or person (name)
    #[arg(long = "as", value_name = "TARGET|NAME")]
    as_: Option<String>,
    /// Show without moving the cursor or writing receipts
    #[arg(long)]
    peek: bool,
}

#[derive(Debug, clap::Args)]
pub struct ClaimArgs {
    /// Files, directories or globs, relative to the current directory
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<String>,
    /// What you are about to do
    #[arg(long, value_name = "TEXT", required = true)]
    intent: String,
    /// Others may hold shared claims on the same paths
    #[arg(long)]
    shared: bool,
    /// How long the claim lasts: 90s, 30m, 2h or seconds [default: 30m]
    #[arg(long, value_name = "DUR")]
    ttl: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ReleaseArgs {
    /// Release your claims overlapping these paths
    #[arg(value_name = "PATH", conflicts_with = "all")]
    paths: Vec<String>,
    /// Release all your claims here
    #[arg(long)]
    all: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GuardMode {
    Warn,
    Block,
}

#[derive(Debug, clap::Args)]
pub struct GuardArgs {
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

pub fn command() -> clap::Command {
    Cli::command()
}

pub fn main() -> ExitCode {
    let cli: Cli = super::parse("ag-room");
    finish("ag-room", run(cli))
}

fn run(cli: Cli) -> CliResult<()> {
    let mut ctx = Ctx::new(cli.global.clone())?;
    let from = cli.from.clone();
    let result = match cli.verb {
        Verb::Tell(a) => tell(&mut ctx, from.as_deref(), a),
        Verb::Who => who(&mut ctx),
        Verb::Peek(a) => peek(&mut ctx, a),
        Verb::Tail(a) => tail(&mut ctx, from.as_deref(), a),
        Verb::Inbox(a) => inbox_cmd(&mut ctx, from.as_deref(), a),
        Verb::Status { msg } => status(&mut ctx, &msg),
        Verb::Ack { msg } => ack(&mut ctx, from.as_deref(), &msg),
        Verb::Claim(a) => claim(&mut ctx, from.as_deref(), a),
        Verb::Release(a) => release(&mut ctx, from.as_deref(), a),
        Verb::Claims => list_claims(&mut ctx),
        Verb::Guard(a) => guard(&mut ctx, from.as_deref(), a),
    };
    ctx.out.flush()?;
    result
}

fn room_err(e: RoomError) -> CliError {
    match e {
        RoomError::Store(s) => CliError::from(s),
        RoomError::TooLong { .. } => CliError::usage(e.to_string()),
        e => CliError::msg(e.to_string()),
    }
}

fn cwd() -> CliResult<PathBuf> {
    let c = std::env::current_dir()?;
    Ok(std::fs::canonicalize(&c).unwrap_or(c))
}

fn warner(ctx: &Ctx) -> impl FnMut(String) + '_ {
    move |w| ctx.out.note(&format!("ag-room: warning: {w}"))
}

/// The speaker: the session in AG_SESSION, else --from / AG_NAME / the user.
fn me(store: &Store, from: Option<&str>) -> CliResult<Me> {
    Ok(presence::identify(store, from)?)
}

fn resolve(store: &Store, t: &str) -> CliResult<Session> {
    match target::resolve(store, t)? {
        Resolved::One(s) => Ok(*s),
        Resolved::None => Err(CliError::new(Exit::NotFound, format!("no session matches {t:?}"))
            .with_hint("`ag-room who` lists the live sessions here; a target is an id, a unique id prefix, a pid, or a unique fragment of a title or goal")),
        Resolved::Ambiguous(c) => Err(ambiguous(t, &c)),
    }
}

fn ambiguous(t: &str, c: &[(String, String)]) -> CliError {
    let mut h = String::from("be more specific; candidates:");
    for (id, title) in c {
        h.push_str(&format!("\n  {id}  {title}"));
    }
    CliError::usage(format!("{t:?} matches {} sessions", c.len())).with_hint(h)
}

fn read_text(t: &str) -> CliResult<String> {
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

fn tell(ctx: &mut Ctx, from: Option<&str>, a: TellArgs) -> CliResult<()> {
    let text = read_text(&a.text)?;
    if a.device && a.to.is_none() {
        return Err(CliError::usage(
            "a device-wide broadcast is refused: the device room carries only direct messages, \
             because a line to every folder would reach every session on this machine",
        )
        .with_hint("add --to TARGET for a direct message, or drop --device to talk to this worktree's room"));
    }
    let store = ctx.store()?;
    let me = me(&store, from)?;
    let here = Room::worktree(&ctx.home, &cwd()?);
    let mut line = Line::new("say", me.from.clone());
    line.text = Some(text);
    line.in_reply_to = a.reply_to.clone();
    let (room, to) = match &a.to {
        None => (here, None),
        Some(t) => {
            let s = resolve(&store, t)?;
            let same = s.cwd.as_deref().is_some_and(|c| {
                crate::room::worktree_key(Path::new(c)) == *here.key.as_ref().unwrap()
            });
            let room = if a.device || !same {
                Room::device(&ctx.home)
            } else {
                here
            };
            (room, Some(s))
        }
    };
    line.to = to.as_ref().map(|s| s.id.clone());
    let start = file::size(&room.path);
    file::append(&room.path, &line).map_err(room_err)?;
    if ctx.global.json {
        ctx.out.line(
            &json!({"id": line.id, "room": room.label(), "to": line.to, "from": line.from})
                .to_string(),
        )?;
    } else {
        ctx.out.line(&line.id)?;
    }
    match &to {
        Some(s) => ctx.out.note(&format!(
            "posted to {} in {} (resolved {})",
            presence::display_name(s),
            room.label(),
            s.id
        )),
        None => ctx.out.detail(&format!("posted to {}", room.label())),
    }
    ctx.out.flush()?;
    if let Some(secs) = a.wait {
        let deadline = Instant::now() + Duration::from_secs_f64(secs.max(0.0));
        loop {
            let mut got: Option<Line> = None;
            file::scan(&room.path, start, &mut |_| {}, &mut |_, l| {
                if l.ty == "delivered" && l.in_reply_to.as_deref() == Some(line.id.as_str()) {
                    got = Some(l);
                    return Flow::Stop;
                }
                Flow::Go
            })
            .map_err(room_err)?;
            if let Some(d) = got {
                ctx.out
                    .note(&format!("delivered to {} at {}", d.from.display(), d.ts));
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(CliError::new(
                    Exit::TempFail,
                    format!("{} was not delivered within {secs} s", line.id),
                )
                .with_hint(format!("`ag-room status {}` shows it later", line.id)));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(())
}

fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    escape_controls(&crate::room::clip(&flat, max), false)
}

fn who(ctx: &mut Ctx) -> CliResult<()> {
    let store = ctx.store()?;
    let key = crate::room::worktree_key(&cwd()?);
    let live = presence::live_in(&store, &key)?;
    let now = crate::clock::now_ms();
    if live.is_empty() && !ctx.global.json {
        ctx.out.note("no live session in this worktree");
    }
    for s in &live {
        let a = store.activity(&s.id, 1)?;
        let goal = a.goal.clone().unwrap_or_default();
        let tool = a.tools.first().map(|t| t.0.clone()).unwrap_or_default();
        let said = a.said.first().cloned().unwrap_or_default();
        let age = crate::clock::age(a.last_at.unwrap_or(s.updated_at), now);
        if ctx.global.json {
            ctx.out.line(
                &json!({"id": s.id, "title": s.title, "goal": goal, "status": s.status.as_str(),
                    "pid": s.pid, "cwd": s.cwd, "last_tool": tool, "last_said": said, "age": age})
                .to_string(),
            )?;
        } else {
            ctx.out.line(&format!(
                "{}  {}  {}  pid {}  {} ago\n    goal: {}\n    last tool: {}  said: {}",
                store.short_id(&s.id)?,
                one_line(&s.title, 40),
                s.status.as_str(),
                s.pid.unwrap_or(0),
                age,
                one_line(&goal, 100),
                if tool.is_empty() { "-".into() } else { tool },
                one_line(&said, 100)
            ))?;
        }
    }
    Ok(())
}

fn peek(ctx: &mut Ctx, a: PeekArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let s = resolve(&store, &a.target)?;
    if ctx.global.json {
        let act = store.activity(&s.id, a.n)?;
        ctx.out.line(
            &json!({"id": s.id, "title": s.title, "status": s.status.as_str(), "live": presence::is_live(&s),
                "goal": act.goal, "last_prompt": act.last_prompt,
                "tools": act.tools.iter().map(|(n, a)| json!({"name": n, "arguments": a})).collect::<Vec<_>>(),
                "said": act.said})
            .to_string(),
        )?;
    } else {
        let text = presence::peek_text(&store, &s, a.n)?;
        ctx.out.line(&escape_controls(&text, true))?;
    }
    Ok(())
}

/// How a line reads on a terminal.
fn render(l: &Line) -> String {
    let t = l.ts.get(11..19).unwrap_or(&l.ts);
    let to =
        l.to.as_deref()
            .map(|t| format!(" → {}", crate::room::short13(t)))
            .unwrap_or_default();
    let body = match l.ty.as_str() {
        "say" => format!(
            "{}{to}: {}",
            l.from.display(),
            escape_controls(l.text.as_deref().unwrap_or(""), true)
        ),
        "claim" => format!(
            "{} claims {} ({}, {} s): {} [{}]",
            l.from.display(),
            l.paths.clone().unwrap_or_default().join(", "),
            l.mode.as_deref().unwrap_or("exclusive"),
            l.ttl_s.unwrap_or(claims::DEFAULT_TTL_S),
            escape_controls(l.intent.as_deref().unwrap_or(""), false),
            l.id
        ),
        "release" => format!(
            "{} releases {}",
            l.from.display(),
            l.claims.clone().unwrap_or_default().join(", ")
        ),
        other => format!(
            "{} {other} {}",
            l.from.display(),
            l.in_reply_to.as_deref().unwrap_or("")
        ),
    };
    format!("{t} {}", escape_controls(&body, true))
}

/// Whether `tail` shows a line without --all: speech to the room or involving me, and claims.
fn shown(l: &Line, me: &Me, all: bool) -> bool {
    if all {
        return true;
    }
    match l.ty.as_str() {
        "say" => match &l.to {
            None => true,
            Some(t) => me.is_addressed(t) || l.from.same(&me.from),
        },
        "claim" | "release" | "ack" => true,
        _ => false,
    }
}

fn emit(ctx: &mut Ctx, l: &Line) -> CliResult<()> {
    if ctx.global.json {
        ctx.out
            .line(&serde_json::to_string(l).map_err(|e| CliError::msg(e.to_string()))?)?;
    } else {
        ctx.out.line(&render(l))?;
    }
    Ok(())
}

fn tail(ctx: &mut Ctx, from: Option<&str>, a: TailArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let me = me(&store, from)?;
    drop(store);
    let room = Room::worktree(&ctx.home, &cwd()?);
    let keep = a.lines.or(if a.follow { Some(10) } else { None });
    let mut ring: std::collections::VecDeque<Line> = Default::default();
    let mut warns = Vec::new();
    let mut offset = file::scan(&room.path, 0, &mut |w| warns.push(w), &mut |_, l| {
        if shown(&l, &me, a.all) {
            ring.push_back(l);
            if keep.is_some_and(|k| ring.len() > k) {
                ring.pop_front();
            }
        }
        Flow::Go
    })
    .map_err(room_err)?;
    for w in warns.drain(..) {
        ctx.out.note(&format!("ag-room: warning: {w}"));
    }
    for l in ring.drain(..) {
        emit(ctx, &l)?;
    }
    ctx.out.flush()?;
    if !a.follow {
        return Ok(());
    }
    follow(ctx, &room, &mut offset, &me, a.all)
}

/// Follow a room: inotify wakes us; a poll every 250 ms is the backstop.
fn follow(ctx: &mut Ctx, room: &Room, offset: &mut u64, me: &Me, all: bool) -> CliResult<()> {
    use notify::{RecursiveMode, Watcher};
    let dir = ctx.home.rooms_dir();
    crate::paths::create_private_dir(&dir)?;
    let (tx, rx) = std::sync::mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |_| {
        let _ = tx.send(());
    })
    .ok();
    if let Some(w) = watcher.as_mut() {
        let _ = w.watch(&dir, RecursiveMode::NonRecursive);
    }
    loop {
        let _ = rx.recv_timeout(Duration::from_millis(250));
        while rx.try_recv().is_ok() {}
        let mut lines = Vec::new();
        let mut warns = Vec::new();
        *offset = file::scan(&room.path, *offset, &mut |w| warns.push(w), &mut |_, l| {
            if shown(&l, me, all) {
                lines.push(l);
            }
            Flow::Go
        })
        .map_err(room_err)?;
        for w in warns {
            ctx.out.note(&format!("ag-room: warning: {w}"));
        }
        for l in &lines {
            emit(ctx, l)?;
        }
        if !lines.is_empty() {
            ctx.out.flush()?;
        }
    }
}

fn inbox_cmd(ctx: &mut Ctx, from: Option<&str>, a: InboxArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let me = match &a.as_ {
        None => me(&store, from)?,
        Some(t) => match target::resolve(&store, t)? {
            Resolved::One(s) => Me::session(&s),
            Resolved::Ambiguous(c) => return Err(ambiguous(t, &c)),
            Resolved::None => Me::named(t, "human"),
        },
    };
    let dir = match me.session.as_ref().and_then(|s| s.cwd.clone()) {
        Some(c) => PathBuf::from(c),
        None => cwd()?,
    };
    let rooms = inbox::rooms_for(&ctx.home, &dir);
    let mut heard: Vec<Heard> = Vec::new();
    // Lines a session held back from its context are unread too.
    let held = if me.session.is_some() {
        store.room_held(&me.reader)?
    } else {
        Vec::new()
    };
    for (room_name, offset, _) in &held {
        if let Some(room) = rooms.iter().find(|r| &r.name == room_name) {
            if let Some(line) = file::read_at(&room.path, *offset) {
                heard.push(Heard {
                    room: room.clone(),
                    offset: *offset,
                    line,
                });
            }
        }
    }
    let mut warns = Vec::new();
    let cursors = inbox::read_new(
        &store,
        &me,
        &rooms,
        false,
        &mut |w| warns.push(w),
        &mut |h| heard.push(h),
    )
    .map_err(room_err)?;
    for w in warns {
        ctx.out.note(&format!("ag-room: warning: {w}"));
    }
    for h in &heard {
        emit(ctx, &h.line)?;
    }
    if !a.peek {
        store.room_advance(&me.reader, &cursors, &[])?;
        let taken: Vec<(String, u64)> = held.iter().map(|(r, o, _)| (r.clone(), *o)).collect();
        store.room_unhold(&me.reader, &taken)?;
        let refs: Vec<&Heard> = heard.iter().collect();
        inbox::deliver(&me, &refs).map_err(room_err)?;
    }
    Ok(())
}

fn find(ctx: &Ctx, msg: &str) -> CliResult<inbox::Status> {
    let rooms = inbox::rooms_for(&ctx.home, &cwd()?);
    let mut w = warner(ctx);
    inbox::status(&rooms, msg, &mut w)
        .map_err(room_err)?
        .ok_or_else(|| {
            CliError::new(
                Exit::NotFound,
                format!("no message {msg:?} in this worktree's room or the device room"),
            )
            .with_hint("`ag-room tail` shows the room's lines with their ids (--json)")
        })
}

fn status(ctx: &mut Ctx, msg: &str) -> CliResult<()> {
    let st = find(ctx, msg)?;
    let m = &st.message.line;
    if ctx.global.json {
        let rec = |ls: &[Line]| {
            ls.iter()
                .map(|l| json!({"by": l.from, "ts": l.ts, "id": l.id}))
                .collect::<Vec<_>>()
        };
        ctx.out.line(
            &json!({"id": m.id, "room": st.message.room.label(), "from": m.from, "to": m.to,
                "posted": m.ts, "delivered": rec(&st.delivered), "acked": rec(&st.acked),
                "replies": rec(&st.replies)})
            .to_string(),
        )?;
        return Ok(());
    }
    ctx.out.line(&format!(
        "posted     {} by {} in {}{}",
        m.ts,
        m.from.display(),
        st.message.room.label(),
        m.to.as_deref()
            .map(|t| format!(" to {t}"))
            .unwrap_or_default()
    ))?;
    for (word, ls) in [
        ("delivered", &st.delivered),
        ("acked", &st.acked),
        ("replied", &st.replies),
    ] {
        if ls.is_empty() && word == "delivered" {
            ctx.out.line("delivered  (not yet)")?;
        }
        for l in ls.iter() {
            ctx.out
                .line(&format!("{word:<10} {} by {}", l.ts, l.from.display()))?;
        }
    }
    Ok(())
}

fn ack(ctx: &mut Ctx, from: Option<&str>, msg: &str) -> CliResult<()> {
    let st = find(ctx, msg)?;
    let store = ctx.store()?;
    let me = me(&store, from)?;
    let mut l = Line::new("ack", me.from.clone());
    l.in_reply_to = Some(st.message.line.id.clone());
    l.to = Some(
        st.message
            .line
            .from
            .session
            .clone()
            .unwrap_or_else(|| st.message.line.from.name.clone()),
    );
    file::append(&st.message.room.path, &l).map_err(room_err)?;
    ctx.out.line(&l.id)?;
    Ok(())
}

/// `90s`, `30m`, `2h`, `1d` or plain seconds.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, 's')) => (&s[..i], 1),
        Some((i, 'm')) => (&s[..i], 60),
        Some((i, 'h')) => (&s[..i], 3600),
        Some((i, 'd')) => (&s[..i], 86_400),
        _ => (s, 1),
    };
    match num.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n * mult),
        _ => Err(format!("{s:?} is not a duration (e.g. 90s, 30m, 2h)")),
    }
}

fn norm_all(paths: &[String], room: &Room) -> CliResult<Vec<String>> {
    let cwd = cwd()?;
    let key = room.key.clone().unwrap();
    paths
        .iter()
        .map(|p| claims::normalize(p, &cwd, &key).map_err(CliError::usage))
        .collect()
}

fn claim(ctx: &mut Ctx, from: Option<&str>, a: ClaimArgs) -> CliResult<()> {
    let ttl = match &a.ttl {
        Some(t) => parse_duration(t).map_err(|e| CliError::usage(format!("--ttl: {e}")))?,
        None => claims::DEFAULT_TTL_S,
    };
    let store = ctx.store()?;
    let me = me(&store, from)?;
    let room = Room::worktree(&ctx.home, &cwd()?);
    let paths = norm_all(&a.paths, &room)?;
    let mut warns = Vec::new();
    let out = claims::claim(
        &store,
        &room,
        &me,
        paths,
        &a.intent,
        a.shared,
        ttl,
        &mut |w| warns.push(w),
    );
    for w in warns {
        ctx.out.note(&format!("ag-room: warning: {w}"));
    }
    match out.map_err(|e| match e {
        RoomError::Invalid(m) => CliError::usage(m),
        e => room_err(e),
    })? {
        Outcome::Claimed(c) => {
            if ctx.global.json {
                ctx.out
                    .line(&serde_json::to_string(&c).unwrap_or_default())?;
            } else {
                ctx.out.line(&c.id)?;
            }
            Ok(())
        }
        Outcome::Refused(cs) => {
            let mut e = CliError::new(
                Exit::Conflict,
                format!(
                    "not claimed: {}",
                    cs.iter()
                        .map(|c| c.describe())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            );
            e = e.with_hint(format!(
                "talk to them first: {}",
                cs[0].claim.how_to_reach()
            ));
            Err(e)
        }
    }
}

fn release(ctx: &mut Ctx, from: Option<&str>, a: ReleaseArgs) -> CliResult<()> {
    if a.paths.is_empty() && !a.all {
        return Err(CliError::usage("release what? name PATHs or pass --all"));
    }
    let store = ctx.store()?;
    let me = me(&store, from)?;
    let room = Room::worktree(&ctx.home, &cwd()?);
    let paths = if a.all {
        None
    } else {
        Some(norm_all(&a.paths, &room)?)
    };
    let ended = {
        let mut w = warner(ctx);
        claims::release(&store, &room, &me, paths.as_deref(), &mut w).map_err(room_err)?
    };
    if ended.is_empty() {
        ctx.out.note("no claim of yours matched; nothing released");
    }
    for c in ended {
        ctx.out.line(&c.id)?;
    }
    Ok(())
}

fn claim_row(c: &Claim) -> String {
    let left = (c.expires_ms - crate::clock::now_ms()).max(0) / 1000;
    format!(
        "{}  {}  {}  {}  {}s left  {}",
        c.id,
        c.holder.display(),
        c.mode,
        c.paths.join(", "),
        left,
        escape_controls(&c.intent, false)
    )
}

fn list_claims(ctx: &mut Ctx) -> CliResult<()> {
    let store = ctx.store()?;
    let room = Room::worktree(&ctx.home, &cwd()?);
    let mut warns = Vec::new();
    let active = claims::active(&store, &room, &mut |w| warns.push(w)).map_err(room_err)?;
    for w in warns {
        ctx.out.note(&format!("ag-room: warning: {w}"));
    }
    for c in &active {
        if ctx.global.json {
            ctx.out
                .line(&serde_json::to_string(c).unwrap_or_default())?;
        } else {
            ctx.out.line(&claim_row(c))?;
        }
    }
    Ok(())
}

fn git_paths(args: &[&str]) -> CliResult<Vec<String>> {
    let out = std::process::Command::new("git")
        .args(args)
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

fn guard(ctx: &mut Ctx, from: Option<&str>, a: GuardArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let me = me(&store, from)?;
    let room = Room::worktree(&ctx.home, &cwd()?);
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
        ctx.out.note(&format!("ag-room: warning: {w}"));
    }
    let found = claims::conflicts(&active, &me.from, &files, true);
    if found.is_empty() {
        return Ok(());
    }
    for c in &found {
        let files: Vec<String> = c.overlaps.iter().map(|(f, _)| f.clone()).collect();
        eprintln!(
            "ag-room: {} claimed by {} (intent {:?}, claim {}); {}",
            files.join(", "),
            c.claim.holder.display(),
            c.claim.intent,
            c.claim.id,
            c.claim.how_to_reach()
        );
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
