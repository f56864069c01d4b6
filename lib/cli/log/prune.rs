//! `ag-log prune`: clear a session's old tool results from later requests now — each one is
//! sent as a one-line placeholder that names the tool and says `recall` can fetch it — without
//! a summary. The log keeps every result.

use crate::cli::{CliResult, Ctx};
use crate::context::{prune, window};

const EXAMPLES: &str = "\
Examples:
  ag-log prune last                # keep the 3 most recent tool results ([context] keep_tool_results)
  ag-log prune last --keep 0       # clear every tool result bigger than its placeholder
  ag-log prune last --json         # print the system/prune record as NDJSON
  ag-log fold last --full          # the request as if nothing had been pruned or compacted";

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// The session: a handle, an id or prefix, a title, `last` (this directory's latest chat) or `last~N`
    #[arg(value_name = "SESSION")]
    session: String,
    /// How many of the most recent tool results stay whole [default: `[context]
    /// keep_tool_results`, else 3]
    #[arg(long, value_name = "N")]
    keep: Option<usize>,
}

pub(crate) fn run(ctx: &mut Ctx, args: Args) -> CliResult<()> {
    let store = ctx.store()?;
    let session = store.resolve(&args.session)?;
    let keep = match args.keep {
        Some(k) => k,
        None => ctx.config()?.context.keep_tool_results,
    };
    // What the fold reads (from the latest compaction on); a running session's loop picks
    // the record up at its next step.
    let view = store.load_context_view(&session)?;
    match prune::prune(&store, &session, &view, keep, None)? {
        Some(done) => {
            if ctx.global.json {
                ctx.out.line(&done.chunk.to_ndjson())?;
            }
            let n = done.prune.cleared.len();
            ctx.out.note(&format!(
                "pruned {n} tool result{} of session {}: about {} tokens fewer; `recall` and \
                 `ag-log cat` still show them",
                if n == 1 { "" } else { "s" },
                session.handle,
                window::short_tokens(done.tokens_saved)
            ));
        }
        None => ctx.out.note(&format!(
            "nothing to prune: session {} has no tool result bigger than its placeholder \
             before its {keep} most recent",
            session.handle
        )),
    }
    Ok(())
}
