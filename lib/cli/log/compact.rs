//! `ag-log compact`: compact a session now, with a summary a person or a script wrote, or
//! one the session's model writes.

use crate::cli::{escape_controls, CliError, CliResult, Ctx, Exit};
use crate::context::{by_hand, window, CompactError};

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
    let config = ctx.config()?.clone();
    // A model writing the summary takes a while: say so on a terminal.
    let _working = match summary {
        None => ctx
            .out
            .progress(0, "compacting: the model writes the summary"),
        Some(_) => ctx.out.progress_none(),
    };
    let ask = by_hand::Ask {
        summary,
        keep_turns: args.keep_turns as usize,
        instructions: args.instructions.clone(),
        queue: !args.no_queue,
    };
    match by_hand::by_hand(&store, &ctx.rooms(), &config, &session, ask) {
        Ok(by_hand::Outcome::Done(done)) => {
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
        Ok(by_hand::Outcome::Nothing) => {
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
        Ok(by_hand::Outcome::Busy { owner }) => Err(CliError::new(
            Exit::Conflict,
            format!(
                "session {} is busy (pid {owner} is running a turn)",
                session.id
            ),
        )
        .with_hint("drop --no-queue to queue the compaction for its next step")),
        Ok(by_hand::Outcome::Queued { owner }) => {
            ctx.out.note(&format!(
                "session {} is busy (pid {owner}); the compaction was queued and happens at its next step",
                session.id
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
