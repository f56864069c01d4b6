//! `ag-log ingest`: a provider SSE stream on stdin becomes one assistant step of a session.

use super::fold::DialectArg;
use crate::cli::{CliError, CliResult, Ctx};
use crate::record::Ingested;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The session to append to: a handle, an id or prefix, a title, `last` or `last~N`
    #[arg(short, long, value_name = "SESSION")]
    session: String,
    /// The stream's dialect
    #[arg(long, value_name = "DIALECT", default_value = "anthropic")]
    dialect: DialectArg,
    /// The turn the step belongs to [default: the session's open turn, else a new one]
    #[arg(long, value_name = "TURN")]
    turn: Option<String>,
    /// Also end the turn with a `turn_end` record when the stream completes
    #[arg(long)]
    end_turn: bool,
}

pub(crate) fn run(ctx: &mut Ctx, args: Args) -> CliResult<()> {
    let store = ctx.store()?;
    let session = store.resolve(&args.session)?;
    let Ingested { stored, end } = crate::record::ingest(
        &store,
        &session,
        args.dialect.into(),
        args.turn,
        args.end_turn,
        std::io::stdin().lock(),
    )?;
    if !ctx.global.quiet {
        for c in &stored {
            ctx.out.line(&c.to_ndjson())?;
        }
    }
    match end {
        Ok(_) => Ok(()),
        Err(message) => Err(
            CliError::msg(format!("the stream on stdin is incomplete: {message}")).with_hint(
                format!(
                    "the {} block(s) sealed before the break were kept, followed by an error chunk",
                    stored.len().saturating_sub(1)
                ),
            ),
        ),
    }
}
