//! `ag-fork`: O(1) forks of a session, and the read-only side chat (`--btw`).

use std::io::Read;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use serde_json::json;

use super::{finish, CliError, CliResult, Ctx, Exit, GlobalArgs};
use crate::agent::side::{side_chat, SideAsk, SideError};
use crate::agent::PlanError;
use crate::fork::{self, ChildTools, ForkError, ForkSpec, Side};
use crate::policy::Policy;
use crate::provider::ChooseError;
use crate::store::{Session, SessionKind, Store};

const EXAMPLES: &str = "\
Examples:
  ag-fork last                                  # fork at the end of the latest turn
  ag-fork 0192f3a1 --at 42 --read-only          # cut at seq 42, read-only tools
  ag-prompt -s \"$(ag-fork last)\" 'try it the other way'
  ag-fork last --btw 'which file holds the retry logic?'
  ag-fork last --btw 'why did the test fail?' --keep-cache
  ag-fork last --json | jq -r .id";

#[derive(Debug, Parser)]
#[command(
    name = "ag-fork",
    version,
    about = "Fork a session in O(1), or ask a read-only side question about it (--btw)",
    after_help = EXAMPLES
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    /// The session to fork: a handle, an id or prefix, a title, `last` or `last~N`
    #[arg(value_name = "SESSION")]
    session: String,
    /// Cut after this seq (1 to the log's length) instead of the end of the latest completed
    /// turn; tool calls the cut leaves open get synthetic results
    #[arg(long, value_name = "SEQ", conflicts_with = "btw", value_parser = clap::value_parser!(i64).range(0..))]
    at: Option<i64>,
    /// Title of the fork [default: "fork of TITLE"; with --btw: "BTW · QUESTION"]
    #[arg(long, value_name = "TITLE")]
    title: Option<String>,
    /// Narrow the fork's tools to this list (names and sets, comma-separated; `-bash` takes one
    /// away from the source's); never widens
    #[arg(long, value_name = "LIST", conflicts_with_all = ["read_only", "btw"], allow_hyphen_values = true)]
    tools: Option<String>,
    /// Give the fork the look-only tools (read, glob, grep, recall)
    #[arg(long, conflicts_with = "btw")]
    read_only: bool,
    /// Ask a side question: a read-only fork (kind `side`) prompted with QUESTION (`-` reads
    /// it from stdin); the answer streams to stdout, the fork's id goes to stderr
    #[arg(long, value_name = "QUESTION")]
    btw: Option<String>,
    /// The side chat's model [default: AG_MODEL, else the session's, else the configuration's]
    #[arg(short, long, value_name = "MODEL", requires = "btw")]
    model: Option<String>,
    /// Keep the session's system prompt and offered tool list byte-identical, so the side
    /// chat's first request reuses its prompt cache; the rules travel with the question and
    /// the guard still denies every tool but read, glob, grep and recall
    #[arg(long, requires = "btw")]
    keep_cache: bool,
}

pub fn command() -> clap::Command {
    Cli::command()
}

pub fn main() -> ExitCode {
    let cli: Cli = super::parse("ag-fork");
    finish("ag-fork", run(cli))
}

fn run(cli: Cli) -> CliResult<()> {
    let mut ctx = Ctx::new(cli.global.clone())?;
    let result = match cli.btw.clone() {
        Some(q) => btw(&mut ctx, &cli, &q),
        None => plain(&mut ctx, &cli),
    };
    ctx.conclude(result)
}

fn fork_error(e: ForkError, source: &Session, side: bool) -> CliError {
    match e {
        ForkError::NoCompletedTurn(_) if side => CliError::new(Exit::Conflict, fork::NO_TURN_SIDE)
            .with_hint(format!(
                "finish a turn first, e.g. ag-prompt -s {} 'hello'",
                source.handle
            )),
        ForkError::NoCompletedTurn(id) => CliError::new(
            Exit::Conflict,
            format!("cannot fork session {id}: it has no completed turn yet"),
        )
        .with_hint("finish a turn first, or pass --at SEQ to cut inside the open turn"),
        e @ ForkError::OutOfRange { .. } => {
            CliError::usage(e.to_string()).with_hint("`ag-log cat SESSION` shows the seqs")
        }
        ForkError::Store(s) => CliError::from(s),
    }
}

fn describe(store: &Store, child: &Session) -> CliResult<serde_json::Value> {
    let _ = store;
    Ok(json!({
        "id": child.id,
        "fork_of": child.fork_of,
        "fork_seq": child.fork_seq,
        "title": child.title,
        "kind": child.kind.as_str(),
        "tools": child.settings()?.tools().names(),
    }))
}

fn plain(ctx: &mut Ctx, cli: &Cli) -> CliResult<()> {
    let store = ctx.store()?;
    let source = store.resolve(&cli.session)?;
    let tools = if cli.read_only {
        ChildTools::Set(Policy::look_only())
    } else if let Some(ask) = super::tools_flag(cli.tools.as_deref())? {
        let have = source.settings()?.tools();
        let asked = ask.resolve(&have);
        let dropped = asked.dropped_by(&have);
        if !dropped.is_empty() {
            ctx.out.note(&format!(
                "the fork may not use {} (its source's tools: {}); not added",
                dropped.join(", "),
                have.names().join(", ")
            ));
        }
        ChildTools::Narrow(asked)
    } else {
        ChildTools::Inherit
    };
    let (child, closed) = fork::fork(
        &store,
        ForkSpec {
            source: source.clone(),
            at: cli.at,
            title: cli.title.clone(),
            kind: SessionKind::Chat,
            tools,
            side: Side::No,
            model: None,
        },
    )
    .map_err(|e| fork_error(e, &source, false))?;
    ctx.out
        .done(format!("session {} was forked as {}", source.id, child.id));
    ctx.out.note(&format!(
        "forked {} at seq {}{}",
        source.handle,
        child.fork_seq.unwrap_or(0),
        if closed > 0 {
            format!("; {closed} open tool call(s) closed with synthetic results")
        } else {
            String::new()
        }
    ));
    if ctx.global.json {
        let mut v = describe(&store, &child)?;
        v["closed"] = closed.into();
        ctx.out.line(&v.to_string())?;
    } else {
        ctx.out.line(&child.id)?;
    }
    Ok(())
}

fn read_question(q: &str) -> CliResult<String> {
    let text = if q == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CliError::from(e).context("reading the question from stdin"))?;
        s
    } else {
        q.to_string()
    };
    if text.trim().is_empty() {
        return Err(CliError::usage("the question is empty"));
    }
    Ok(text.trim_end_matches('\n').to_string())
}

fn btw(ctx: &mut Ctx, cli: &Cli, question: &str) -> CliResult<()> {
    let question = read_question(question)?;
    let store = ctx.store()?;
    let source = store.resolve(&cli.session)?;
    let cwd_now = std::fs::canonicalize(std::env::current_dir()?)?;
    let config = ctx.config()?.clone();
    let ask = SideAsk {
        source: &source,
        question: &question,
        title: cli.title.clone(),
        model: cli.model.as_deref(),
        keep_cache: cli.keep_cache,
    };
    let side = match side_chat(&store, &config, ask) {
        Ok(side) => side,
        Err(SideError::Fork(e)) => return Err(fork_error(e, &source, true)),
        Err(SideError::Model(PlanError::Model(ChooseError::NoModel))) => {
            return Err(
                CliError::usage("no model for the side chat").with_hint(format!(
                    "pass -m PROVIDER/MODEL, set AG_MODEL, or {}",
                    crate::config::MODEL_SETTING_HINT
                )),
            )
        }
        Err(SideError::Model(PlanError::Model(e))) => {
            return Err(
                CliError::usage(e.to_string()).with_hint("`ag-prompt models` lists the providers")
            )
        }
        Err(SideError::Model(e)) => return Err(super::prompt::plan_error(e, &config)),
        Err(SideError::Plan { child, error }) => {
            let e = match error {
                PlanError::Busy { .. } => CliError::new(
                    Exit::Conflict,
                    format!("the side chat {} is busy", child.id),
                ),
                e => super::prompt::plan_error(e, &config),
            };
            return Err(side_chat_failed(e, &child));
        }
    };
    let child = side.plan.session.clone();
    ctx.out
        .done(format!("the side chat {} was created", child.id));
    if ctx.global.json {
        let mut v = describe(&store, &child)?;
        v["type"] = "fork".into();
        ctx.out.line(&v.to_string())?;
    }
    super::prompt::run_turn_in(
        ctx,
        &store,
        side.plan,
        Some(super::prompt::Input {
            text: side.prompt,
            images: Vec::new(),
        }),
        &config,
        &cwd_now,
        &super::prompt::Want::default(),
    )
    .map_err(|e| side_chat_failed(e, &child))
}

/// A side chat whose turn failed is kept: the error says so and how to go on with it.
fn side_chat_failed(e: CliError, child: &Session) -> CliError {
    if e.is_stdout_failure() {
        return e;
    }
    let what = match e.exit {
        Exit::TempFail => format!(
            "the model is unavailable; the side chat {} was kept without an answer",
            child.id
        ),
        Exit::Interrupted => format!("interrupted; the side chat {} was kept", child.id),
        _ => format!(
            "the side-chat prompt was rejected; the side chat {} was kept for inspection",
            child.id
        ),
    };
    let short = child.handle.as_str();
    CliError {
        exit: e.exit,
        error: e.error.context(what),
        hint: Some(format!(
            "ask again with ag-prompt -s {short} QUESTION; inspect it with ag-log show {short}"
        )),
    }
}
