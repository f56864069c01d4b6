//! `ag-summon`: start agents from definitions (subagents and user agents), and wait for,
//! list and stop them.

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};
use serde_json::json;

use super::{escape_controls, finish, CliError, CliResult, Ctx, Exit, GlobalArgs};
use crate::store::{Session, SessionKind, Store};
use crate::summon::spawn::{self, Request, Spawner, SummonError, SummonErrorKind};
use crate::summon::{Catalog, Origin};

const EXAMPLES: &str = "\
Examples:
  ag-summon agents                                    # the definitions you can summon
  ag-summon explorer 'where is the retry logic?'      # AGENT TASK
  ag-summon --agent worker --background --tools read,edit 'fix the typo in README.md'
  ag-summon retrieve 0192f3a1 --timeout 5m            # wait for a background child's answer
  ag-summon ps                                        # children of $AG_SESSION, or all agents
  ag-summon cancel 0192f3a1
  ag-summon --agent default --top-level 'tidy the changelog'   # needs user_agents = \"allow\"";

#[derive(Debug, Parser)]
#[command(
    name = "ag-summon",
    version,
    about = "Start agents from definitions (subagents and user agents); retrieve, list and cancel them",
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    #[command(subcommand)]
    pub(crate) sub: Option<Sub>,
    #[command(flatten)]
    pub(crate) run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Sub {
    /// List the agent definitions: subagents, and user agents when permitted
    Agents,
    /// Wait for a subagent to finish; print its final answer (stdout) and status (stderr)
    Retrieve {
        /// The child session: a handle, an id or prefix
        #[arg(value_name = "ID")]
        id: String,
        /// Give up after this long (e.g. 30s, 5m, 1h30m; a bare number is seconds); exit 75
        #[arg(long, value_name = "DUR")]
        timeout: Option<String>,
    },
    /// List spawned agents and their status
    Ps {
        /// Only the children of this session [default: $AG_SESSION, else every agent]
        #[arg(long, value_name = "SESSION")]
        parent: Option<String>,
        /// Every subagent and user agent, ignoring $AG_SESSION
        #[arg(long, conflicts_with = "parent")]
        all: bool,
    },
    /// Stop a running agent: SIGTERM to its process group, SIGKILL after a grace period
    Cancel {
        #[arg(value_name = "ID")]
        id: String,
        /// How long to wait after SIGTERM before SIGKILL (seconds, or 500ms, 1m…; at most 1h)
        #[arg(long, value_name = "DUR", default_value = "5", value_parser = crate::clock::parse_duration)]
        grace: Duration,
    },
}

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The agent definition to run (see `ag-summon agents`), then the task (`-` reads it
    /// from stdin); with --agent, only the task
    #[arg(value_names = ["AGENT", "TASK"], num_args = 0..=2)]
    words: Vec<String>,
    /// The agent definition to run, when the task is the only positional argument
    #[arg(short, long, value_name = "SLUG")]
    agent: Option<String>,
    /// The spawning session [default: $AG_SESSION; with neither, you are the spawner]
    #[arg(long, value_name = "SESSION", conflicts_with = "top_level")]
    parent: Option<String>,
    /// Start a user agent: an independent session (needs `[permissions] user_agents = "allow"`)
    #[arg(long)]
    top_level: bool,
    /// Print the child's id at once instead of waiting for its answer
    #[arg(long)]
    background: bool,
    /// Tools for the child (names and sets, comma-separated; `+edit`/`-bash` change the
    /// definition's); cut down to the spawner's
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    tools: Option<String>,
    /// The child's directory; a subagent's must lie inside the parent's
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
}

pub fn command() -> clap::Command {
    Cli::command()
}

pub fn main() -> ExitCode {
    let cli: Cli = super::parse("ag-summon");
    finish("ag-summon", run(cli))
}

fn run(cli: Cli) -> CliResult<()> {
    let mut ctx = Ctx::new(cli.global)?;
    let result = match cli.sub {
        Some(Sub::Agents) => agents(&mut ctx),
        Some(Sub::Retrieve { id, timeout }) => retrieve(&mut ctx, &id, timeout.as_deref()),
        Some(Sub::Ps { parent, all }) => ps(&mut ctx, parent.as_deref(), all),
        Some(Sub::Cancel { id, grace }) => cancel(&mut ctx, &id, grace),
        None => summon(&mut ctx, cli.run),
    };
    ctx.conclude(result)
}

fn report_problems(ctx: &Ctx, catalog: &Catalog) {
    for p in &catalog.problems {
        ctx.out.warn(p);
    }
}

fn agents(ctx: &mut Ctx) -> CliResult<()> {
    let cwd = std::env::current_dir()?;
    let config = ctx.config()?.clone();
    let catalog = Catalog::load(&cwd);
    report_problems(ctx, &catalog);
    let users = config.user_agents_allowed();
    if ctx.global.json {
        for d in catalog
            .subagents()
            .chain(catalog.user_agents().filter(|_| users))
        {
            let v = json!({
                "slug": d.slug, "name": d.name, "description": d.description,
                "kind": if d.is_subagent { "subagent" } else { "user_agent" },
                "tools": d.tools, "models": d.models, "cwd": d.cwd,
                "max_steps": d.max_steps, "source": d.origin.kind(),
                "path": d.origin.path(), "trusted": !matches!(d.origin, Origin::Project { trusted: false, .. }),
                "withheld": d.withheld, "replaces": d.replaces.as_ref().map(Origin::describe),
            });
            ctx.out.line(&v.to_string())?;
        }
        return Ok(());
    }
    let group =
        |ctx: &mut Ctx, title: &str, defs: Vec<&crate::summon::AgentDef>| -> CliResult<()> {
            ctx.out.line(&ctx.out.bold(title))?;
            if defs.is_empty() {
                ctx.out.line("  (none)")?;
            }
            for d in defs {
                ctx.out.line(&format!(
                    "  {:<14} {}  [{}]",
                    escape_controls(&d.slug, false),
                    escape_controls(&d.blurb(), false),
                    d.tools.join(",")
                ))?;
                ctx.out.line(&format!(
                    "  {:<14} {}",
                    "",
                    escape_controls(&source_line(d), false)
                ))?;
            }
            Ok(())
        };
    group(ctx, "Subagents:", catalog.subagents().collect())?;
    if users {
        ctx.out.line("")?;
        group(
            ctx,
            "User agents (--top-level):",
            catalog.user_agents().collect(),
        )?;
    } else {
        ctx.out.detail(
            "user agents are not listed: set `[permissions] user_agents = \"allow\"` to use them",
        );
    }
    Ok(())
}

/// `from built-in`, `from user PATH`, `from project PATH`, with what a project definition
/// replaces and what its untrusted folder withholds.
fn source_line(d: &crate::summon::AgentDef) -> String {
    let mut line = format!("from {}", d.origin.describe());
    if let Some(r) = &d.replaces {
        line.push_str(&format!(", replacing the {} definition", r.describe()));
    }
    if !d.withheld.is_empty() {
        line.push_str(&format!(
            "; withheld until the folder is trusted: {}",
            d.withheld.join(",")
        ));
    }
    line
}

fn summon_error(e: SummonError) -> CliError {
    if let Some(store) = &e.store {
        let (exit, hint) = crate::cli::error::exit_and_hint(store);
        let err = CliError::new(exit, &e.message);
        return match hint.or(e.hint) {
            Some(h) => err.with_hint(h),
            None => err,
        };
    }
    let exit = match e.kind {
        SummonErrorKind::Usage => Exit::Usage,
        SummonErrorKind::NotFound => Exit::NotFound,
        SummonErrorKind::Refused | SummonErrorKind::Other => Exit::Error,
    };
    let err = CliError::new(exit, &e.message);
    match e.hint {
        Some(h) => err.with_hint(h),
        None => err,
    }
}

/// The agent and the task from `AGENT TASK`, or `--agent AGENT TASK`.
fn agent_and_task(args: &RunArgs) -> CliResult<(String, Option<String>)> {
    let form = "`ag-summon AGENT TASK` (or `ag-summon --agent AGENT TASK`)";
    match (&args.agent, args.words.as_slice()) {
        (Some(a), []) => Ok((a.clone(), None)),
        (Some(a), [task]) => Ok((a.clone(), Some(task.clone()))),
        (Some(a), [first, ..]) => Err(CliError::usage(format!(
            "the agent is given twice: --agent {a} and {first:?}"
        ))
        .with_hint(format!("run it as {form}"))),
        (None, [agent, task]) => Ok((agent.clone(), Some(task.clone()))),
        (None, [one]) => Err(CliError::usage(format!(
            "only {one:?} was given: name the agent, then the task"
        ))
        .with_hint(format!(
            "run it as {form}; `ag-summon agents` lists the definitions"
        ))),
        (None, _) => Err(
            CliError::usage("no agent and no task given").with_hint(format!(
                "run it as {form}; `ag-summon agents` lists the definitions"
            )),
        ),
    }
}

fn summon(ctx: &mut Ctx, args: RunArgs) -> CliResult<()> {
    let (agent, task) = agent_and_task(&args)?;
    let task = read_task(task.as_deref())?;
    let tools = super::tools_flag(args.tools.as_deref())?;
    let here = std::fs::canonicalize(std::env::current_dir()?)?;
    let store = ctx.store()?;
    // The spawner: --parent, else AG_SESSION, else the person at this shell. A user agent
    // has no parent, but its tools are still cut down to the session that starts it.
    let parent_ref = args.parent.clone().or_else(|| {
        std::env::var("AG_SESSION")
            .ok()
            .filter(|s| !s.trim().is_empty())
    });
    let spawner = Spawner::of_shell(&store, parent_ref.as_deref(), &here)?;
    let config = super::load_config(&ctx.out, &spawner.cwd)?;
    let catalog = Catalog::load(&spawner.cwd);
    report_problems(ctx, &catalog);
    let req = Request {
        agent,
        task,
        tools,
        cwd: args.cwd.clone(),
        top_level: args.top_level,
    };
    let spawned =
        spawn::spawn(&store, &ctx.home, &config, &catalog, &spawner, &req).map_err(summon_error)?;
    for note in spawned
        .withheld
        .iter()
        .chain(spawned.dropped_note().as_ref())
    {
        ctx.out.message(note);
    }
    let id = spawned.child.id.clone();
    ctx.out.done(format!("agent {id} was started"));
    if args.top_level || args.background {
        return print_started(ctx, &spawned);
    }
    ctx.out.note(&format!("subagent {id}"));
    let interrupt = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, interrupt.clone());
    let r = spawn::wait(&store, &id, None, Some(&interrupt))?;
    if r.timed_out {
        return Err(CliError::new(Exit::Interrupted, "interrupted").with_hint(format!(
            "subagent {id} still runs; `ag-summon retrieve {id}` waits for it, `ag-summon cancel {id}` stops it"
        )));
    }
    print_result(ctx, &r)
}

/// The task as given, or read from stdin for `-`; it must say something.
fn read_task(task: Option<&str>) -> CliResult<String> {
    let task = match task {
        Some("-") => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s
        }
        Some(t) => t.to_string(),
        None => {
            return Err(CliError::usage("no task given")
                .with_hint("pass the task, or `-` to read it from stdin"))
        }
    };
    if task.trim().is_empty() {
        return Err(CliError::usage("the task is empty"));
    }
    Ok(task)
}

/// A child started without waiting for it (`--background`, `--top-level`): its id on
/// stdout, or its JSON object.
fn print_started(ctx: &mut Ctx, spawned: &spawn::Spawned) -> CliResult<()> {
    let id = &spawned.child.id;
    ctx.out.note(&format!(
        "started {} {} (pid {}; log {})",
        spawned.child.kind.as_str(),
        id,
        spawned.pid,
        spawned.log.display()
    ));
    if ctx.global.json {
        ctx.out.line(
            &json!({"id": id, "kind": spawned.child.kind.as_str(), "status": spawned.child.status.as_str(),
                    "pid": spawned.pid, "dropped": spawned.dropped})
            .to_string(),
        )?;
    } else {
        ctx.out.line(id)?;
    }
    Ok(())
}

fn print_result(ctx: &mut Ctx, r: &spawn::ChildResult) -> CliResult<()> {
    let id = &r.session.id;
    if ctx.global.json {
        ctx.out.line(
            &json!({"id": id, "status": r.status.as_str(), "answer": r.answer, "error": r.error})
                .to_string(),
        )?;
    } else {
        if let Some(a) = &r.answer {
            ctx.out.line(&escape_controls(a, true))?;
        }
        ctx.out.note(&format!("status: {}", r.status.as_str()));
    }
    match r.status {
        _ if r.succeeded() => Ok(()),
        s => Err(CliError::msg(format!(
            "agent {id} {}{}",
            s.as_str(),
            r.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ))
        .with_hint(format!("its output is in `ag-log cat {id}`"))),
    }
}

fn retrieve(ctx: &mut Ctx, id: &str, timeout: Option<&str>) -> CliResult<()> {
    let timeout = timeout
        .map(|t| {
            crate::clock::parse_duration(t).map_err(|e| CliError::usage(format!("--timeout: {e}")))
        })
        .transpose()?;
    let store = ctx.store()?;
    let s = store.resolve(id)?;
    match s.kind {
        SessionKind::UserAgent => {
            return Err(CliError::msg(format!(
                "{} is a user agent: user agents are fire-and-forget and cannot be retrieved",
                s.id
            ))
            .with_hint(format!("read what it wrote with `ag-log cat {}`", s.id)))
        }
        SessionKind::Subagent => {}
        _ => {
            return Err(CliError::usage(format!("{} is not a subagent", s.id))
                .with_hint("`ag-summon ps` lists the spawned agents"))
        }
    }
    let interrupt = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, interrupt.clone());
    let started = std::time::Instant::now();
    let r = spawn::wait(&store, &s.id, timeout, Some(&interrupt))?;
    if r.timed_out {
        if timeout.is_some_and(|t| started.elapsed() >= t) {
            if ctx.global.json {
                ctx.out
                    .line(&json!({"id": s.id, "status": r.status.as_str()}).to_string())?;
            }
            return Err(
                CliError::new(Exit::TempFail, format!("agent {} is still running", s.id))
                    .with_hint("retrieve it again later, or stop it with `ag-summon cancel`"),
            );
        }
        return Err(CliError::new(Exit::Interrupted, "interrupted"));
    }
    print_result(ctx, &r)
}

fn ps(ctx: &mut Ctx, parent: Option<&str>, all: bool) -> CliResult<()> {
    let store = ctx.store()?;
    let parent_ref = if all {
        None
    } else {
        parent.map(str::to_string).or_else(|| {
            std::env::var("AG_SESSION")
                .ok()
                .filter(|s| !s.trim().is_empty())
        })
    };
    let parent_id = parent_ref
        .map(|r| store.resolve(&r).map(|s| s.id))
        .transpose()?;
    let kids = store.spawned(parent_id.as_deref())?;
    if ctx.global.quiet {
        for k in &kids {
            ctx.out.line(&k.id)?;
        }
        return Ok(());
    }
    let mut rows = Vec::new();
    for k in &kids {
        let status = spawn::effective_status(&store, k)?;
        if ctx.global.json {
            ctx.out.line(
                &json!({"id": k.id, "handle": k.handle, "kind": k.kind.as_str(), "agent": k.agent,
                        "status": status.as_str(), "parent": k.parent_id, "pid": k.pid,
                        "cwd": k.cwd, "title": k.title, "created_at": k.created_at})
                .to_string(),
            )?;
            continue;
        }
        let parent = k
            .parent_id
            .as_deref()
            .map_or_else(|| "-".to_string(), |p| store.shown(p));
        rows.push(vec![
            k.handle.clone(),
            k.kind.as_str().into(),
            k.agent.clone().unwrap_or_else(|| "-".into()),
            status.as_str().into(),
            parent,
            format!(
                "{} ago",
                crate::clock::age(k.created_at, crate::clock::now_ms())
            ),
            k.title.clone(),
        ]);
    }
    if ctx.global.json {
        return Ok(());
    }
    if kids.is_empty() {
        ctx.out.note("no agents");
        return Ok(());
    }
    let header = [
        "ID", "KIND", "AGENT", "STATUS", "PARENT", "STARTED", "TITLE",
    ];
    super::table::print(&mut ctx.out, &header, rows)?;
    Ok(())
}

fn cancel(ctx: &mut Ctx, id: &str, grace: Duration) -> CliResult<()> {
    let store: Store = ctx.store()?;
    let s: Session = store.resolve(id)?;
    if !matches!(s.kind, SessionKind::Subagent | SessionKind::UserAgent) {
        return Err(CliError::usage(format!(
            "{} is not a spawned agent; only subagents and user agents can be cancelled",
            s.id
        )));
    }
    let grace = grace.min(Duration::from_secs(3600));
    let c = spawn::cancel_reporting(&store, &s, grace)?;
    if ctx.global.json {
        ctx.out.line(
            &json!({"id": s.id, "status": c.now.as_str(), "was": c.was.as_str()}).to_string(),
        )?;
    } else if c.stopped() {
        ctx.out.note(&format!("cancelled {}", s.id));
    } else {
        ctx.out.note(&format!(
            "{} already ended ({}); nothing to cancel",
            s.id,
            c.was.as_str()
        ));
    }
    Ok(())
}
