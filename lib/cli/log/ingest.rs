//! `ag-log ingest`: a provider SSE stream on stdin becomes one assistant step of a session.

use std::io::Read;

use serde_json::json;

use super::fold::DialectArg;
use crate::cli::{CliError, CliResult, Ctx};
use crate::log::{ChunkData, NewChunk, Role};
use crate::reduce::{ChunkOp, StepEnd, StreamReader};
use crate::store::{Page, Session, Store};

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
    let (turn, step) = turn_and_step(&store, &session, args.turn)?;
    let (mut batch, end) = read_stream(args.dialect, &turn, step);
    match &end {
        Ok(step_end) if args.end_turn => {
            batch.push(NewChunk::new(Role::System, turn_end(step_end)).in_turn(&turn, step))
        }
        Ok(_) => {}
        Err(message) => batch.push(
            NewChunk::new(
                Role::System,
                ChunkData::Error {
                    message: format!("ingest: {message}"),
                    status: None,
                },
            )
            .in_turn(&turn, step),
        ),
    }
    let stored = store.append(&session.id, batch)?;
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

/// Which turn and step the stream's blocks go to: the open turn (no `turn_end` yet) goes on
/// with its next step, else a turn starts; `--turn` names one.
fn turn_and_step(
    store: &Store,
    session: &Session,
    asked: Option<String>,
) -> CliResult<(String, i64)> {
    let mut last = None;
    store.for_each_chunk(
        session,
        &Page {
            limit: Some(1),
            ..Default::default()
        },
        |c| {
            last = Some(c);
            Ok::<(), crate::store::StoreError>(())
        },
    )?;
    // Steps only grow within a turn, so the open turn's last chunk carries its latest step.
    let open = last.filter(|c| !c.data.is_turn_end());
    Ok(match (asked, open) {
        (Some(t), Some(c)) if t == c.turn => (t, c.step + 1),
        (Some(t), _) => (t, 1),
        (None, Some(c)) => (c.turn, c.step + 1),
        (None, None) => (crate::ids::new_id(), 1),
    })
}

/// Read the stream on stdin to its end (or its break): the sealed blocks, and how it ended.
fn read_stream(
    dialect: DialectArg,
    turn: &str,
    step: i64,
) -> (Vec<NewChunk>, Result<StepEnd, String>) {
    let mut reader = StreamReader::new(dialect.into());
    let mut sealed: Vec<NewChunk> = Vec::new();
    let mut keep = |op: ChunkOp| {
        if let ChunkOp::Seal { data, .. } = op {
            sealed.push(NewChunk::new(Role::Assistant, data).in_turn(turn, step));
        }
    };
    let mut failure: Option<String> = None;
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0u8; 64 * 1024];
    while !reader.is_done() {
        let n = match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                failure = Some(format!("reading stdin: {e}"));
                break;
            }
        };
        if let Err(e) = reader.push(&buf[..n], &mut keep) {
            failure = Some(e.to_string());
            break;
        }
    }
    let end = match failure {
        Some(f) => Err(f),
        None => reader.finish(&mut keep).map_err(|e| e.to_string()),
    };
    (sealed, end)
}

fn turn_end(end: &StepEnd) -> ChunkData {
    ChunkData::system(
        crate::log::TURN_END,
        json!({
            "stop_reason": end.stop_reason,
            "usage": {
                "input": end.usage.input,
                "output": end.usage.output,
                "cache_read": end.usage.cache_read,
                "cache_write": end.usage.cache_write,
            },
            "model": end.model,
            "duration_ms": 0,
        }),
    )
}
