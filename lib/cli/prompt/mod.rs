//! `ag-prompt`: run a turn of an agent against a model, streaming, with tools. The flags and
//! the call into the library are here; `live` prints the turn as it happens.

mod acp;
mod answer;
mod live;
mod models;

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::{CommandFactory, Parser, Subcommand};

pub(crate) use answer::Want;
use live::LiveView;

use super::{finish, CliError, CliResult, Ctx, Exit, GlobalArgs};
use crate::agent::{Outcome, PlanError, Prepared, SessionChoice, TurnPlan, TurnRequest};
use crate::config::Config;
use crate::provider::{ChooseError, ModelError};
use crate::summon::AgentDef;

const EXAMPLES: &str = "\
Examples:
  ag-prompt -m echo 'hello'                        # offline: answers with your words
  ag-prompt -m script:demo.toml --tools all 'go'   # offline: a scripted multi-step run
  ag-prompt -m anthropic/claude-sonnet-4-5 'Summarize README.md'
  ag-prompt -c 'and the tests?'                    # continue this directory's latest session
  ag-prompt --tools +edit,+bash 'fix the tests'    # the defaults and edit, bash: writes only here, no network
  ag-prompt --tools bash --sandbox read-only --net 'check the links'  # reads, network
  git diff | ag-prompt -s last -                   # the prompt from stdin
  ag-prompt -s build --wait 'and the tests?'       # busy: queue it, wait, print that answer
  git diff | ag-prompt 'review this'               # piped stdin and the prompt, both sent
  ag-prompt -a notes.md 'what is still open?'      # a text file as context
  ag-prompt -m sonnet -a shot.png 'what is wrong in this screenshot?'   # an image
  ag-prompt --output json -m echo hi | jq -r .answer   # only the result object
  ag-prompt -o answer.md 'write the release notes' # the final answer to a file too
  ag-prompt --schema @schema.json 'list the open bugs' | jq .   # JSON valid against a schema
  ag-prompt --json -m echo hi | jq -c 'select(.type==\"result\")'
  ag-prompt -s last --compact                      # summarize the session now; it goes on from the summary
  ag-prompt -c --compact 'now write the tests'     # compact, then run the prompt
  ag-prompt --trust                                # this project's config may choose its model
  ag-prompt --tools edit --allow-protected 'fix the pre-commit hook'   # may edit .git/, .ag/, .claude/
  ag-prompt models                                 # providers, and each model's context window
  ag-prompt --tools 'read,mcp__git__*' 'What changed since v1?'   # with an MCP server's tools
  ag-prompt mcp list                               # MCP servers: do they start, which tools";

#[derive(Debug, Parser)]
#[command(
    name = "ag-prompt",
    version,
    about = "Run a turn of an agent: stream the model's answer, run its tools, log every chunk",
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
    /// List the models and providers this machine can use
    Models {
        /// Forget what providers taught about MODEL on every endpoint: the windows learned from
        /// "too long" errors and how they count tokens; its configured or built-in window
        /// applies again
        #[arg(long, value_name = "MODEL")]
        forget: Option<String>,
    },
    /// MCP servers from the user config ([mcp.NAME]) and a trusted folder's .mcp.json
    #[command(subcommand)]
    Mcp(McpSub),
    /// Serve the Agent Client Protocol on stdin/stdout, so an editor (Zed, Neovim) runs ag
    /// sessions: ordinary sessions in the store, which every ag command reads meanwhile
    #[command(after_help = acp::EXAMPLES)]
    Acp(acp::AcpArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpSub {
    /// Each configured server (user config, or a trusted folder's .mcp.json), whether it
    /// starts, where it comes from, and its tools (as mcp__SERVER__TOOL)
    List,
}

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The prompt (`-` reads it from stdin)
    #[arg(value_name = "PROMPT")]
    prompt: Option<String>,
    /// Continue this session: a handle, an id or unique prefix, a title or title fragment,
    /// `last` or `last~N`
    #[arg(short, long, value_name = "SESSION", conflicts_with_all = ["continue_last", "new"])]
    session: Option<String>,
    /// Continue this directory's latest chat session (`--any`: of any directory)
    #[arg(short = 'c', long = "continue", conflicts_with = "new")]
    continue_last: bool,
    /// Continue the session named NAME in this directory, starting it on the first run: one
    /// command for a cron job or a CI step that keeps one session
    #[arg(long, value_name = "NAME", value_parser = parse_name,
          conflicts_with_all = ["session", "continue_last", "new", "session_id"])]
    name: Option<String>,
    /// Start a new session (the default without -s or -c)
    #[arg(long)]
    new: bool,
    /// Attach a file (repeatable): a text file goes before the prompt, marked with its path;
    /// a PNG, JPEG, GIF or WebP image (told by its content, at most 3.75 MiB) goes as an
    /// image to models that take them
    #[arg(short = 'a', long = "attach", value_name = "FILE")]
    attach: Vec<std::path::PathBuf>,
    /// What stdout carries: the streamed answer (text), or only the result object (json:
    /// {session, handle, turn, answer, stop_reason, usage}) for scripts
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    output: answer::Output,
    /// The answer must be JSON valid against this JSON Schema (the text, or @FILE): asked of
    /// the provider natively where it can (OpenAI), through a forced `final_answer` tool call
    /// otherwise; checked before it is printed, and sent back to the model with the errors
    /// up to agent.schema_retries times (default 2); still invalid, exit 1
    #[arg(long, value_name = "SCHEMA|@FILE")]
    schema: Option<String>,
    /// Also write the turn's final answer to FILE
    #[arg(short = 'o', long = "output-file", value_name = "FILE")]
    output_file: Option<std::path::PathBuf>,
    /// The new session's id, chosen up front (a UUID), so a script knows it before it runs
    #[arg(long, value_name = "UUID", value_parser = super::log::parse_uuid,
          conflicts_with_all = ["session", "continue_last"])]
    session_id: Option<String>,
    /// PROVIDER/MODEL, an alias (sonnet, opus, haiku, gpt, …; `ag-prompt models` lists them),
    /// `echo` or `script:FILE` [env: AG_MODEL]
    #[arg(short, long, value_name = "MODEL")]
    model: Option<String>,
    /// A new session's system prompt, the text or @FILE, in place of the default one (which
    /// says where it runs, the date, the platform, its tools and sandbox). The project's
    /// instructions are still added
    #[arg(long, value_name = "TEXT|@FILE")]
    system: Option<String>,
    /// Leave out the project's instructions (AGENTS.md, else CLAUDE.md, in each directory
    /// from the repository's top down to here), which a new session otherwise gets after its
    /// system prompt; on a follow-up, drops them from the session
    #[arg(long)]
    no_project_context: bool,
    /// Tools the session may use: names and sets (read-only, all, none), comma-separated;
    /// MCP tools as mcp__SERVER__TOOL or mcp__SERVER__*. `+edit` adds to the defaults (or to
    /// the session's tools) and `-bash` takes away, so `--tools +edit` keeps the room tools. A
    /// new session defaults to read-only; an existing session's tools can only narrow.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    tools: Option<String>,
    /// Start the new session from an agent definition (`ag-summon agents` lists them): its
    /// system prompt, tools (narrowed by --tools), models and step limit
    #[arg(long, value_name = "SLUG", conflicts_with_all = ["session", "continue_last"])]
    agent: Option<String>,
    /// Stop the turn before a step that would take its cost past USD dollars (the next step
    /// is estimated at what the last one cost); the turn ends cleanly, exit 5
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    max_cost: Option<f64>,
    /// Plan this run against a context window of N tokens (at least 256), whatever the
    /// model's: exercise compaction on an offline model, or use less of a large window
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(256..))]
    context_window: Option<u64>,
    /// Stop after N model round trips in this turn (at least 1)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_steps: Option<u32>,
    /// Ask for extended thinking with this many budget tokens (Anthropic models; signed
    /// thinking is kept and replayed) [config: agent.thinking_budget]
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..=u32::MAX as u64))]
    thinking: Option<u64>,
    /// Title of a new session [default: the start of the prompt]
    #[arg(long, value_name = "TITLE")]
    title: Option<String>,
    /// When the session is busy, fail with status 3 instead of queueing the prompt
    #[arg(long, conflicts_with = "wait")]
    no_queue: bool,
    /// When the session is busy and the prompt is queued, wait until the turn that takes it
    /// ends and print that turn's answer (as --output, -o and --json ask)
    #[arg(long)]
    wait: bool,
    /// Compact the session now: the model summarizes what came before the last few thousand
    /// tokens, and the session goes on from that summary (the log keeps everything). Then
    /// runs PROMPT, when one is given. Needs -s or -c
    #[arg(long)]
    compact: bool,
    /// The sandbox the bash tool runs in: workspace-write (the default: writes only in the
    /// session's directory and a private TMPDIR, no network), read-only, or off. A session
    /// keeps its mode; a follow-up can only tighten it [config: sandbox.mode]
    #[arg(long, value_name = "MODE", value_parser = parse_sandbox_mode)]
    sandbox: Option<crate::sandbox::Mode>,
    /// Let sandboxed bash commands use the network [config: sandbox.network]
    #[arg(long)]
    net: bool,
    /// How calls to tools that change something (write, edit, bash, MCP tools) are decided:
    /// auto (the tool policy alone) or ask (a person allows each on the terminal: once, for
    /// the session, or denies with a reason the model reads; without a terminal such a call
    /// is denied). The session keeps the mode [config: agent.approval]
    #[arg(long, value_name = "MODE", value_parser = parse_approval)]
    approval: Option<crate::agent::ApprovalMode>,
    /// Allow, in this run, every call the tool policy allows, asking nobody
    #[arg(short = 'y', long)]
    yes: bool,
    /// Open the chat (what `ag chat` runs; also what ag-prompt does on a terminal without a
    /// prompt). Reads plain lines when stdin is not a terminal
    #[arg(long, conflicts_with_all = ["compact", "wait", "schema", "output_file", "attach", "command"])]
    chat: bool,
    /// Run the custom command NAME (.ag/commands/NAME.md, ~/.config/ag/commands/NAME.md, a
    /// trusted folder's .claude/commands/NAME.md): its prompt, with PROMPT as $ARGUMENTS
    #[arg(long, value_name = "NAME")]
    command: Option<String>,
    /// Trust this folder (the one holding the nearest .ag/, else the current one), so its
    /// project config may choose the model, providers and MCP servers, and approve the
    /// servers its .mcp.json names now (one added or changed later asks again). Recorded in
    /// trusted-folders in the user config directory; without a prompt, only records
    #[arg(long)]
    trust: bool,
    /// Let this turn's write and edit tools change .git/, .ag/ and .claude/ (refused
    /// otherwise: files there run code or change what ag trusts) [config:
    /// permissions.protected_writes = "allow"]
    #[arg(long)]
    allow_protected: bool,
}

fn parse_approval(s: &str) -> Result<crate::agent::ApprovalMode, String> {
    crate::agent::ApprovalMode::parse(s)
}

fn parse_sandbox_mode(s: &str) -> Result<crate::sandbox::Mode, String> {
    crate::sandbox::Mode::parse(s)
}

pub fn command() -> clap::Command {
    Cli::command()
}

pub fn main() -> ExitCode {
    let cli: Cli = super::parse("ag-prompt");
    finish("ag-prompt", run(cli))
}

fn run(cli: Cli) -> CliResult<()> {
    let mut ctx = Ctx::new(cli.global)?;
    let result = match cli.sub {
        Some(Sub::Models { forget: None }) => models::list(&mut ctx),
        Some(Sub::Models {
            forget: Some(model),
        }) => models::forget(&mut ctx, &model),
        Some(Sub::Mcp(McpSub::List)) => super::mcp_client::list(&mut ctx),
        Some(Sub::Acp(args)) => acp::run(&mut ctx, args),
        None => prompt(&mut ctx, cli.run),
    };
    ctx.conclude(result)
}

fn prompt(ctx: &mut Ctx, args: RunArgs) -> CliResult<()> {
    if args.trust {
        super::trust_here(&ctx.out)?;
        if args.prompt.is_none() && !args.compact {
            return Ok(());
        }
    }
    if args.chat
        || (args.prompt.is_none()
            && !args.compact
            && args.command.is_none()
            && crate::cli::chat::wanted())
    {
        return chat(ctx, &args);
    }
    let args = with_command(args)?;
    let (text, title, images) = match (&args.prompt, args.compact) {
        (None, true) => (None, None, Vec::new()),
        _ => {
            let p = answer::build(args.prompt.clone(), &args.attach)?;
            (Some(p.text), p.title, p.images)
        }
    };
    // `-o json` is the look-alike of `--output json`: it would write a file named `json`.
    if let Some(f) = &args.output_file {
        let name = f.to_string_lossy();
        if matches!(name.as_ref(), "json" | "text") && !f.exists() {
            return Err(CliError::usage(format!(
                "-o {name} would write the answer to a file named {name:?}"
            ))
            .with_hint(format!(
                "--output {name} prints {} on stdout; to write a file of that name, say -o ./{name}",
                if name == "json" { "the result object" } else { "the answer" }
            )));
        }
    }
    let want = answer::Want {
        result_event: ctx.global.json,
        result_only: args.output == answer::Output::Json,
        file: args.output_file.clone(),
        structured: args.schema.is_some(),
    };
    let schema = answer_schema(&args)?;
    if args.compact && args.session.is_none() && !args.continue_last {
        return Err(CliError::usage(
            "--compact needs a session: pass -s SESSION or -c",
        ));
    }
    let store = ctx.store()?;
    let cwd_now = std::fs::canonicalize(std::env::current_dir()?)?;
    let config = ctx.config()?.clone();
    let agent = match &args.agent {
        Some(slug) => Some(agent_def(ctx, &cwd_now, slug)?),
        None => None,
    };
    let req = turn_request(&args, (text.clone(), title), images.len(), agent, &cwd_now)?;
    let plan =
        match crate::agent::prepare(&store, &config, req).map_err(|e| plan_error(e, &config))? {
            Prepared::Ready(mut plan) => {
                plan.allow_protected = args.allow_protected;
                plan.yes = args.yes;
                plan.schema = schema;
                plan.max_cost = args.max_cost;
                plan.context_window = args.context_window;
                plan
            }
            Prepared::CompactionQueued { session, owner } => {
                ctx.out.note(&format!(
                    "session {} is busy (pid {owner}); the compaction was queued for its next step",
                    session.id
                ));
                return Ok(());
            }
            Prepared::Queued {
                session,
                owner,
                item,
            } => {
                announce_queued(ctx, &session, owner, args.wait)?;
                if args.wait {
                    let text = text.as_deref().unwrap_or_default();
                    return answer::waited(ctx, &store, &session, item, text, &want);
                }
                return Ok(());
            }
        };
    for n in &plan.notes {
        ctx.out.note(n);
    }
    for n in &plan.warnings {
        ctx.out.warn(n);
    }
    run_turn_in(
        ctx,
        &store,
        *plan,
        text.map(|text| Input { text, images }),
        &config,
        &cwd_now,
        &want,
    )
}

/// The chat, with the flags a conversation takes.
fn chat(ctx: &mut Ctx, args: &RunArgs) -> CliResult<()> {
    let cwd = std::fs::canonicalize(std::env::current_dir()?)?;
    let agent = match &args.agent {
        Some(slug) => Some(agent_def(ctx, &cwd, slug)?),
        None => None,
    };
    let system = args
        .system
        .as_deref()
        .map(|s| super::log::text_or_file(s, "--system"))
        .transpose()?;
    super::tools_flag(args.tools.as_deref())?;
    let chat = crate::cli::chat::ChatArgs {
        session: args.session.clone(),
        continue_last: args.continue_last,
        model: args.model.clone(),
        tools: args.tools.clone(),
        agent,
        approval: args.approval,
        yes: args.yes,
        sandbox: args.sandbox,
        net: args.net,
        system,
        title: args.title.clone(),
        project_context: !args.no_project_context,
    };
    crate::cli::chat::run(ctx, chat)
}

/// `--command NAME`: the prompt is the command's, with the given one as its arguments.
fn with_command(mut args: RunArgs) -> CliResult<RunArgs> {
    let Some(name) = args.command.clone() else {
        return Ok(args);
    };
    let cwd = std::env::current_dir()?;
    let commands = crate::commands::Commands::load(&cwd, &[]);
    let Some(cmd) = commands.get(&name) else {
        let known: Vec<&str> = commands.by_name.keys().map(String::as_str).collect();
        return Err(CliError::new(Exit::NotFound, format!("no command named {name:?}")).with_hint(
            match known.is_empty() {
                true => "commands are Markdown prompts in .ag/commands/NAME.md or ~/.config/ag/commands/NAME.md".to_string(),
                false => format!("the commands here: {}", known.join(", ")),
            },
        ));
    };
    let given = match args.prompt.as_deref() {
        Some("-") => answer::read_stdin()?,
        Some(p) => p.to_string(),
        None => String::new(),
    };
    args.title = args
        .title
        .or_else(|| Some(format!("/{name} {}", given.trim()).trim().to_string()));
    args.prompt = Some(cmd.expand(&given));
    Ok(args)
}

/// `--schema`: the schema the answer must satisfy, read from the flag's text or file.
fn answer_schema(args: &RunArgs) -> CliResult<Option<Arc<crate::structured::AnswerSchema>>> {
    args.schema
        .as_deref()
        .map(|s| {
            let text = super::log::text_or_file(s, "--schema")?;
            crate::structured::AnswerSchema::parse(&text)
                .map(Arc::new)
                .map_err(|e| {
                    let e = CliError::usage(format!("--schema: {e}"));
                    // `--schema schema.json` meant the file.
                    match !s.starts_with('@') && std::path::Path::new(s.trim()).is_file() {
                        true => e.with_hint(format!(
                            "{s:?} is a file: write --schema @{} to read the schema from it",
                            s.trim()
                        )),
                        false => e,
                    }
                })
        })
        .transpose()
}

/// `--max-cost`: a positive amount of US dollars (`0.50`, `$2`).
fn parse_usd(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_start_matches('$');
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not an amount of US dollars above 0, like 0.50"
        )),
    }
}

/// `--name`: a job's name for its session, one line of printable text.
fn parse_name(s: &str) -> Result<String, String> {
    let name = s.trim();
    if name.is_empty() || name.chars().any(char::is_control) || name.chars().count() > 200 {
        return Err("a session name is one line of 1 to 200 printable characters".into());
    }
    Ok(name.to_string())
}

/// What the flags ask of the turn, for [`crate::agent::prepare`] to resolve.
fn turn_request(
    args: &RunArgs,
    (text, title): (Option<String>, Option<String>),
    images: usize,
    agent: Option<AgentDef>,
    cwd_now: &std::path::Path,
) -> CliResult<TurnRequest> {
    let tools = super::tools_flag(args.tools.as_deref())?;
    let system = args
        .system
        .as_deref()
        .map(|s| super::log::text_or_file(s, "--system"))
        .transpose()?;
    let session = match (&args.session, args.continue_last) {
        _ if args.name.is_some() => SessionChoice::Named {
            name: args.name.clone().unwrap_or_default(),
            title: args.title.clone(),
        },
        (Some(r), _) => SessionChoice::Existing(r.clone()),
        (None, true) => SessionChoice::Last,
        (None, false) => SessionChoice::New {
            title: args.title.clone().or(title),
            id: args.session_id.clone(),
        },
    };
    Ok(TurnRequest {
        text,
        session,
        model: args.model.clone(),
        tools,
        system,
        agent,
        max_steps: args.max_steps,
        max_cost: args.max_cost,
        thinking: args.thinking,
        compact: args.compact,
        sandbox: args.sandbox,
        net: args.net,
        approval: args.approval,
        queue: !args.no_queue,
        cwd: cwd_now.to_path_buf(),
        project_context: !args.no_project_context,
        images,
    })
}

/// The prompt was queued for the process running the session: say so (and, with `--json`,
/// a `queued` object on stdout).
fn announce_queued(
    ctx: &mut Ctx,
    session: &crate::store::Session,
    owner: i64,
    wait: bool,
) -> CliResult<()> {
    let waits = if wait {
        "; waiting for that turn to end"
    } else {
        ""
    };
    ctx.out.note(&format!(
        "session {} is busy (pid {owner}); your prompt was queued and joins its turn at the next step{waits}",
        session.handle
    ));
    if ctx.global.json {
        let queued = crate::log::event::LiveEvent::Queued {
            session: session.id.clone(),
            owner_pid: owner,
        };
        ctx.out.line(&queued.to_line())?;
    }
    Ok(())
}

/// What a turn is given: the prompt's text and its images.
pub(crate) struct Input {
    pub(crate) text: String,
    pub(crate) images: Vec<crate::log::ChunkData>,
}

/// An agent definition by its slug, reporting on stderr the definitions that could not be read.
fn agent_def(ctx: &Ctx, cwd: &std::path::Path, slug: &str) -> CliResult<AgentDef> {
    let catalog = crate::summon::Catalog::load(cwd);
    for p in &catalog.problems {
        ctx.out.warn(p);
    }
    catalog.get(slug).cloned().ok_or_else(|| {
        CliError::new(Exit::NotFound, format!("no agent named {slug:?}"))
            .with_hint("`ag-summon agents` lists the definitions")
    })
}

/// How a planning refusal reads: what to do about it, and the exit status.
pub(crate) fn plan_error(e: PlanError, config: &crate::config::Config) -> CliError {
    match e {
        PlanError::Busy { .. } => CliError::new(Exit::Conflict, e.to_string())
            .with_hint("drop --no-queue to queue the prompt instead"),
        PlanError::BusyWithImages { .. } => CliError::new(Exit::Conflict, e.to_string())
            .with_hint("send it when the running turn has ended"),
        PlanError::NoImages { .. } => CliError::usage(e.to_string()).with_hint(
            "images go to anthropic/… and openai/… models (and openai-compatible servers); \
             nothing was sent or written",
        ),
        PlanError::Model(ChooseError::NoModel) => {
            CliError::usage("no model given").with_hint(format!(
                "pass -m PROVIDER/MODEL, set AG_MODEL, or {}; offline models: echo, \
                 script:FILE; `ag-prompt models` lists what is configured",
                crate::config::MODEL_SETTING_HINT
            ))
        }
        PlanError::Model(ChooseError::Model(ModelError::UnknownProvider { ref model, .. })) => {
            let hint = match crate::provider::suggest(model, config) {
                Some(s) => format!(
                    "did you mean -m {s}? (`ag-prompt models` lists the providers and aliases)"
                ),
                None => "`ag-prompt models` lists the providers and aliases".into(),
            };
            CliError::usage(e.to_string()).with_hint(hint)
        }
        PlanError::Model(ChooseError::Model(ModelError::Script { ref path, .. })) => {
            let hint = format!(
                "a script model is a TOML file of steps, named by its path from this directory \
                 (-m script:{path}); examples/scripts/ in ag's repository has some"
            );
            CliError::usage(e.to_string()).with_hint(hint)
        }
        PlanError::Model(e) => {
            CliError::usage(e.to_string()).with_hint("`ag-prompt models` lists the providers")
        }
        PlanError::NoPrice { ref model } => {
            let hint = format!(
                "set [models.\"{model}\"] price = {{ input = …, output = … }} (US dollars per million tokens) in the config"
            );
            CliError::usage(e.to_string()).with_hint(hint)
        }
        PlanError::Sandbox(e) => CliError::usage(e.to_string())
            .with_hint("start a new session to choose a looser sandbox"),
        PlanError::Store(s) => CliError::from(s),
    }
}

/// Run one planned turn, printing it live (shared by ag-prompt and ag-fork --btw): the
/// compaction first when the plan asks for one, then the prompt when there is one.
pub(crate) fn run_turn_in(
    ctx: &mut Ctx,
    store: &crate::store::Store,
    plan: TurnPlan<'_>,
    input: Option<Input>,
    config: &Config,
    cwd_now: &std::path::Path,
    want: &answer::Want,
) -> CliResult<()> {
    let session = plan.session.clone();
    let compact = plan.compact;
    ctx.out
        .note(&format!("session {} {}", session.handle, session.id));
    super::announce_model(&ctx.out, &plan.model, &plan.origin, plan.provider.as_ref());
    let home = ctx.home.clone();
    let mut agent = plan.into_agent(store, &home, config, cwd_now, interrupt_on_signals());
    agent.mcp = super::mcp_client::servers(ctx, config, &agent.policy);
    agent.approver = super::approve::terminal_if_asked(&agent, ctx.out.color_err);
    if agent.bash_unconfined() {
        ctx.out.note(
            "sandbox: off — bash commands run unconfined, with all your rights and the network",
        );
    }
    let mut view = LiveView::new(ctx, &session.id, &agent.tool_ctx.sandbox);
    // With a schema, stdout gets the validated answer at the end, not the streamed text.
    let structured_text = want.structured && !want.result_only && !view.ctx.global.json;
    view.mute = want.result_only || structured_text;
    if compact {
        compact_first(&mut view, &agent)?;
    }
    let Some(input) = input else {
        let stdout_error = view.close();
        // The session goes back to idle with the agent's lease.
        drop(agent);
        ctx.out
            .done(format!("session {} was compacted", session.id));
        return stdout_error.map_or(Ok(()), |e| Err(e.into()));
    };
    let outcome = agent.run_turn(&input.text, input.images, &mut |ev| view.event(ev));
    let mut stdout_error = view.close();
    let mut schema_failure = None;
    if let Some(done) = view.turn_done.take() {
        let (result, text) = answer::result(store, &session, &done, want.structured)?;
        if want.structured {
            schema_failure = answer::schema_failure(&result, &session);
        }
        if want.result_event {
            view.emit(result.clone());
        }
        if want.result_only {
            view.mute = false;
            view.emit(result);
        } else if structured_text && result.get("structured").is_some() {
            view.mute = false;
            view.emit_text(&text);
        }
        stdout_error = stdout_error.or_else(|| view.close());
        if let Some(path) = &want.file {
            std::fs::write(path, format!("{text}\n")).map_err(|e| {
                CliError::from(e).context(format!("-o {}: writing the answer", path.display()))
            })?;
        }
    }
    // The turn is recorded whatever happened to stdout: a failed write says so (exit 74).
    ctx.out.done(format!(
        "the turn ran and is recorded in session {}{}",
        session.id,
        answer::non_default_tools(store, &session)
            .map(|t| format!(" (tools: {})", t.join(", ")))
            .unwrap_or_default()
    ));
    turn_result(&session, outcome, stdout_error)?;
    schema_failure.map_or(Ok(()), Err)
}

/// A flag that Ctrl-C, a kill and a closed terminal raise: each ends the turn and the
/// tool's processes.
fn interrupt_on_signals() -> Arc<AtomicBool> {
    let interrupt = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        let _ = signal_hook::flag::register(sig, interrupt.clone());
    }
    interrupt
}

/// `--compact`: compact the session before the prompt. A failure leaves the session as it
/// was (the agent's lease releases it).
fn compact_first(view: &mut LiveView<'_>, agent: &crate::agent::Agent<'_>) -> CliResult<()> {
    let session = &agent.session;
    match agent.compact_now(&mut |ev| view.event(ev)) {
        Ok(crate::agent::Manual::Done) => {}
        Ok(crate::agent::Manual::Nothing) => view.ctx.out.note(&format!(
            "nothing to compact: session {} holds nothing before its latest turn",
            session.id
        )),
        Err(e) => {
            let _ = view.close();
            let exit = match e {
                crate::agent::AgentError::CompactUnavailable(_) => Exit::TempFail,
                _ => Exit::Error,
            };
            return Err(CliError::new(exit, e.to_string()).with_hint(format!(
                "session {} is as it was; nothing was written",
                session.id
            )));
        }
    }
    Ok(())
}

/// How the turn's outcome ends the command: a failed turn, an interrupt or a failed write
/// to stdout is an error with its exit status.
fn turn_result(
    session: &crate::store::Session,
    outcome: Result<Outcome, crate::agent::AgentError>,
    stdout_error: Option<std::io::Error>,
) -> CliResult<()> {
    match outcome {
        // The agent's lease leaves the session `failed` when the agent is dropped.
        Err(e) => Err(match e {
            crate::agent::AgentError::Store(s) => CliError::from(s),
            crate::agent::AgentError::Compact(m) => CliError::msg(m),
            crate::agent::AgentError::CompactUnavailable(m) => CliError::new(Exit::TempFail, m),
        }),
        Ok(Outcome::Done {
            stop_reason: crate::log::StopReason::MaxCost,
        }) => Err(CliError::new(
            Exit::BudgetSpent,
            "the turn stopped before its next step would pass --max-cost",
        )
        .with_hint(format!(
            "session {} keeps the turn; `ag-log show {}` says what it cost",
            session.handle, session.handle
        ))),
        Ok(Outcome::Done { .. }) => stdout_error.map_or(Ok(()), |e| Err(e.into())),
        Ok(Outcome::Interrupted) => Err(CliError::new(Exit::Interrupted, "interrupted").with_hint(
            format!(
                "what was written stays in session {}; continue with ag-prompt -s {}",
                session.handle, session.handle
            ),
        )),
        Ok(Outcome::TooLarge { message }) => {
            Err(CliError::new(Exit::TooLarge, message).with_hint(format!(
                "shorten the prompt or attach less, or use a model with a larger window (-m …); \
                 session {} keeps the turn",
                session.handle
            )))
        }
        Ok(Outcome::Failed {
            message, retryable, ..
        }) => {
            let exit = if retryable {
                Exit::TempFail
            } else {
                Exit::Error
            };
            Err(CliError::new(exit, message).with_hint(format!(
                "the turn ended with an error; session {} keeps what was written",
                session.handle
            )))
        }
    }
}
