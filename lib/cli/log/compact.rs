//! `ag-log compact`: compact a session now, with a summary a person or a script wrote, or
//! one the session's model writes.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use crate::cli::{escape_controls, CliError, CliResult, Ctx, Exit};
use crate::context::{self, window, CompactError, Summarizer, SummarySource};
use crate::fold::compaction::Trigger;
use crate::fold::ToolSpec;
use crate::store::{Leased, Session, Store};

const EXAMPLES: &str = "\
Examples:
  ag-log compact last --summary @handoff.md     # your summary stands for the older part
  ag-log compact last --summary 'Goal: …; done: …; next: …'
  ag-log compact last                           # the session's model writes the summary
  ag-log compact last --instructions 'keep the API decisions' --keep-turns 2
  ag-log fold last --full                       # the request as if nothing had been compacted";

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// The session: a handle, an id or prefix, a title, `last` (this directory's latest chat) or `last~N`
    #[arg(value_name = "SESSION")]
    session: String,
    /// The summary: the text, or @FILE (UTF-8). Without it, the session's model (or
    /// `[context] compact_model`) writes one
    #[arg(long, value_name = "TEXT|@FILE")]
    summary: Option<String>,
    /// Keep the latest N turns verbatim and summarize everything before them [default: 1]
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    keep_turns: u32,
    /// What the summary should keep or focus on, for the model that writes it (as Claude
    /// Code's `/compact focus on …`)
    #[arg(long, value_name = "TEXT", conflicts_with = "summary")]
    instructions: Option<String>,
    /// When the session is running, fail with status 3 instead of queueing the compaction
    #[arg(long)]
    no_queue: bool,
}

/// The summary a person gave: the text, or a file's; empty or non-UTF-8 is refused.
fn given_summary(v: &str) -> CliResult<String> {
    let text = match v.strip_prefix('@') {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|e| {
                CliError::from(e).context(format!("--summary @{path}: cannot read the file"))
            })?;
            String::from_utf8(bytes).map_err(|e| {
                CliError::usage(format!(
                    "--summary @{path}: the file is not UTF-8 text (invalid byte at offset {})",
                    e.utf8_error().valid_up_to()
                ))
            })?
        }
        None => v.to_string(),
    };
    if text.trim().is_empty() {
        return Err(CliError::usage("--summary: the summary is empty")
            .with_hint("write what the session should remember, or leave --summary out for the model to write it"));
    }
    Ok(text.trim().to_string())
}

pub(crate) fn run(ctx: &mut Ctx, args: Args) -> CliResult<()> {
    let summary = args.summary.as_deref().map(given_summary).transpose()?;
    let store = ctx.store()?;
    let session = store.resolve(&args.session)?;
    let lease = match store.lease(&session.id, None)? {
        Leased::Held(lease) => lease,
        Leased::Busy { owner } if args.no_queue => {
            return Err(CliError::new(
                Exit::Conflict,
                format!(
                    "session {} is busy (pid {owner} is running a turn)",
                    session.id
                ),
            )
            .with_hint("drop --no-queue to queue the compaction for its next step"));
        }
        Leased::Busy { owner } | Leased::Queued { owner, .. } => {
            store.enqueue_compaction(&session.id, summary.as_deref())?;
            ctx.out.note(&format!(
                "session {} is busy (pid {owner}); the compaction was queued and happens at its next step",
                session.id
            ));
            return Ok(());
        }
    };
    // Whatever happens, the session goes back to the status it had.
    lease.end_as(session.status);
    compact_claimed(ctx, &store, &session, summary, &args)
}

fn compact_claimed(
    ctx: &mut Ctx,
    store: &Store,
    session: &Session,
    summary: Option<String>,
    args: &Args,
) -> CliResult<()> {
    let cwd = PathBuf::from(session.cwd.clone().unwrap_or_else(|| ".".into()));
    let here = std::env::current_dir()?;
    let config = crate::cli::load_config(&ctx.out, &here)?;
    let source = match summary {
        Some(s) => SummarySource::Given(s),
        None => SummarySource::Model(summarizer(store, session, &config)?),
    };
    // A model writing the summary takes a while: say so on a terminal.
    let _working = match &source {
        SummarySource::Model(_) => ctx
            .out
            .progress(0, "compacting: the model writes the summary"),
        _ => ctx.out.progress_none(),
    };
    let req = context::Request {
        store,
        home: &ctx.home,
        session,
        cwd: &cwd,
        trigger: Trigger::Manual,
        keep_tokens: config.context.keep_tokens,
        keep_turns: Some(args.keep_turns as usize),
        instructions: args.instructions.clone(),
        tokens_before: None,
        turn: None,
        recall: session
            .settings()?
            .tools()
            .allows(crate::policy::Tool::Recall.name()),
    };
    let view = store.load_context_view(session)?;
    match context::compact(&req, &view, source) {
        Ok(Some(done)) => {
            if ctx.global.json {
                for c in &done.chunks {
                    ctx.out.line(&c.to_ndjson())?;
                }
            }
            ctx.out.note(&format!(
                "compacted {} → {} tokens",
                window::short_tokens(done.compaction.tokens_before),
                window::short_tokens(done.compaction.tokens_after)
            ));
            Ok(())
        }
        Ok(None) => {
            ctx.out.note(&format!(
                "nothing to compact: session {} holds nothing before its latest {} (--keep-turns)",
                session.id,
                match args.keep_turns {
                    1 => "turn".to_string(),
                    n => format!("{n} turns"),
                }
            ));
            Ok(())
        }
        Err(CompactError::Store(e)) => Err(e.into()),
        Err(CompactError::Changed) => Err(CliError::new(
            Exit::Conflict,
            format!("session {} changed while it was being compacted", session.id),
        )
        .with_hint("run the command again")),
        Err(e @ CompactError::Unavailable(_)) => Err(CliError::new(
            Exit::TempFail,
            escape_controls(&e.to_string(), false),
        )
        .with_hint(format!(
            "session {} is as it was; try again later, or pass --summary TEXT to compact without a model",
            session.id
        ))),
        Err(e) => Err(CliError::msg(escape_controls(&e.to_string(), false)).with_hint(format!(
            "session {} is as it was; nothing was written. Pass --summary TEXT to compact without a model",
            session.id
        ))),
    }
}

/// The model that writes the summary: `[context] compact_model`, else the session's.
fn summarizer(
    store: &Store,
    session: &Session,
    config: &crate::config::Config,
) -> CliResult<Summarizer> {
    let model = config
        .context
        .compact_model
        .clone()
        .or_else(|| session.model.clone())
        .ok_or_else(|| {
            CliError::usage(format!(
                "session {} has no model to summarize it",
                session.id
            ))
            .with_hint("pass --summary TEXT, or set [context] compact_model in the config")
        })?;
    let provider = crate::provider::resolve(&model, config).map_err(|e| {
        CliError::usage(e.to_string()).with_hint("`ag-prompt models` lists the providers")
    })?;
    let learned = store.learned_window(&window::learned_key(provider.as_ref()))?;
    let settings = session.settings()?;
    let system = settings.system_prompt().unwrap_or_default();
    // The session's tools, so a provider accepts the replayed calls; what is not a built-in
    // tool gets a bare schema (the summarizer is told not to call tools).
    let names = settings.tools.clone().unwrap_or_default();
    let tools = names
        .iter()
        .map(|n| {
            crate::policy::Tool::parse(n)
                .and_then(crate::tools::spec)
                .unwrap_or_else(|| ToolSpec {
                    name: n.clone(),
                    description: n.clone(),
                    input_schema: json!({"type": "object"}),
                })
        })
        .collect();
    Ok(Summarizer {
        provider: Arc::from(provider),
        system: (!system.is_empty()).then_some(system),
        tools,
        window: context::lookup(&model, config, learned).context_window,
        network: config.network.clone(),
    })
}
