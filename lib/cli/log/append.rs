//! `ag-log append`: one user text, or a batch of NDJSON chunks, written atomically.

use std::io::Read;
use std::path::PathBuf;

use crate::cli::{CliError, CliResult, Ctx};
use crate::log::{decode_line, ChunkData, NewChunk, Role};
use crate::store::{NewSession, StoreError};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session to append to (full id, unique prefix, or `last`)
    #[arg(
        short,
        long,
        value_name = "SESSION",
        conflicts_with = "new",
        required_unless_present = "new"
    )]
    session: Option<String>,
    /// Start a new session and append to it
    #[arg(long)]
    new: bool,
    /// Title of the new session
    #[arg(long, requires = "new", value_name = "TITLE")]
    title: Option<String>,
    /// Working directory recorded for the new session [default: the current directory]
    #[arg(long, requires = "new", value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// A user message for a new turn (`-` reads it from stdin). Without it, NDJSON chunks
    /// are read from stdin.
    #[arg(value_name = "TEXT")]
    text: Option<String>,
}

pub fn run(ctx: &mut Ctx, args: Args) -> CliResult<()> {
    let (chunks, lines) = match args.text.as_deref() {
        Some("-") => {
            let text = read_stdin_text()?;
            (
                vec![NewChunk::new(Role::User, ChunkData::text(text))],
                vec![0],
            )
        }
        Some(text) => (
            vec![NewChunk::new(Role::User, ChunkData::text(text))],
            vec![0],
        ),
        None => read_ndjson()?,
    };
    let store = ctx.store()?;
    let bad_line = |e: StoreError| match e {
        StoreError::BadChunk { index, message } if lines[index] > 0 => {
            CliError::msg(format!("stdin line {}: {message}", lines[index]))
                .with_hint("nothing was appended; fix the input and run again")
        }
        e => CliError::from(e),
    };
    let stored = if args.new {
        let cwd = match args.cwd {
            Some(d) => d,
            None => std::env::current_dir()?,
        };
        let cwd = std::fs::canonicalize(&cwd)
            .map_err(|e| CliError::from(e).context(format!("--cwd {}", cwd.display())))?;
        let new = NewSession {
            title: args.title.unwrap_or_default(),
            cwd: Some(cwd.to_string_lossy().into_owned()),
            ..Default::default()
        };
        let (session, stored) = store.create_with_chunks(new, chunks).map_err(bad_line)?;
        ctx.out.note(&format!("session {}", session.id));
        stored
    } else {
        let reference = args.session.as_deref().unwrap_or("last");
        let session = store.resolve(reference)?;
        store.append(&session.id, chunks).map_err(bad_line)?
    };
    if !ctx.global.quiet {
        for c in &stored {
            ctx.out.line(&c.to_ndjson())?;
        }
    }
    Ok(())
}

fn read_stdin_text() -> CliResult<String> {
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes)?;
    let mut text = String::from_utf8(bytes).map_err(|e| {
        CliError::msg(format!(
            "stdin is not valid UTF-8 (byte offset {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    if text.trim().is_empty() {
        return Err(CliError::usage("the message on stdin is empty"));
    }
    Ok(text)
}

/// Decode every line before anything is written, so a bad line anywhere appends nothing.
fn read_ndjson() -> CliResult<(Vec<NewChunk>, Vec<usize>)> {
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes)?;
    let mut chunks = Vec::new();
    let mut lines = Vec::new();
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let n = i + 1;
        let line = std::str::from_utf8(raw).map_err(|e| {
            CliError::msg(format!(
                "stdin line {n}: not valid UTF-8 (byte {} of the line)",
                e.valid_up_to() + 1
            ))
            .with_hint("nothing was appended; fix the input and run again")
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let chunk = decode_line(n, line).map_err(|e| {
            CliError::msg(format!("stdin {e}"))
                .with_hint("nothing was appended; fix the input and run again")
        })?;
        chunks.push(chunk);
        lines.push(n);
    }
    if chunks.is_empty() {
        return Err(CliError::usage("no chunks on stdin").with_hint(
            "pipe NDJSON chunks in, or give the message as an argument: ag-log append -s SESSION 'text'",
        ));
    }
    Ok((chunks, lines))
}
