//! `ag-log append`: one user text, or a batch of NDJSON chunks, written atomically.

use std::cell::Cell;
use std::io::{BufRead, Read};
use std::path::PathBuf;

use crate::cli::{CliError, CliResult, Ctx, Exit};
use crate::log::{decode_line, Chunk, ChunkData, NewChunk, Role};
use crate::store::{AppendTarget, NewSession, StoreError};

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

const NOTHING_APPENDED: &str = "nothing was appended; fix the input and run again";

pub fn run(ctx: &mut Ctx, args: Args) -> CliResult<()> {
    let text = match args.text.as_deref() {
        Some("-") => Some(read_stdin_text()?),
        Some(t) => Some(t.to_string()),
        None => None,
    };
    let store = ctx.store()?;
    let target = if args.new {
        let cwd = match args.cwd {
            Some(d) => d,
            None => std::env::current_dir()?,
        };
        let cwd = std::fs::canonicalize(&cwd)
            .map_err(|e| CliError::from(e).context(format!("--cwd {}", cwd.display())))?;
        AppendTarget::New(Box::new(NewSession {
            title: args.title.unwrap_or_default(),
            cwd: Some(cwd.to_string_lossy().into_owned()),
            ..Default::default()
        }))
    } else {
        let reference = args.session.as_deref().unwrap_or("last");
        AppendTarget::Session(store.resolve(reference)?.id)
    };

    // Keep the stored chunks only when they are to be printed: a large import streams from
    // stdin into the store without being held in memory.
    let quiet = ctx.global.quiet;
    let mut stored: Vec<Chunk> = Vec::new();
    let mut sink = |c: Chunk| {
        if !quiet {
            stored.push(c)
        }
    };
    let line = Cell::new(0usize);
    let result = match text {
        Some(t) => store.append_stream(
            target,
            std::iter::once(Ok(NewChunk::new(Role::User, ChunkData::text(t)))),
            &mut sink,
        ),
        None => {
            let stdin = std::io::stdin().lock();
            store.append_stream(target, ndjson_chunks(stdin, &line), &mut sink)
        }
    };
    let (session, _) = result.map_err(|e| match e {
        StoreError::BadChunk { index, message } if index == usize::MAX => {
            CliError::msg(message).with_hint(NOTHING_APPENDED)
        }
        StoreError::BadChunk { message, .. } => {
            CliError::msg(format!("stdin line {}: {message}", line.get())).with_hint(NOTHING_APPENDED)
        }
        StoreError::EmptyBatch => CliError::usage("no chunks on stdin").with_hint(
            "pipe NDJSON chunks in, or give the message as an argument: ag-log append -s SESSION 'text'",
        ),
        e => CliError::from(e),
    })?;
    if args.new {
        ctx.out.note(&format!("session {}", session.id));
    }
    for c in &stored {
        ctx.out.line(&c.to_ndjson())?;
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
        return Err(CliError::new(Exit::Usage, "the message on stdin is empty"));
    }
    Ok(text)
}

/// NDJSON chunks from a reader, one line at a time; `line` tracks the line being handled so
/// an error from the store can name it. Decoding errors carry their own line (index MAX).
fn ndjson_chunks<'a>(
    mut input: impl BufRead + 'a,
    line: &'a Cell<usize>,
) -> impl Iterator<Item = Result<NewChunk, StoreError>> + 'a {
    let mut buf = Vec::with_capacity(4096);
    std::iter::from_fn(move || loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) => {
                return Some(Err(StoreError::BadChunk {
                    index: usize::MAX,
                    message: format!("reading stdin: {e}"),
                }))
            }
        }
        let n = line.get() + 1;
        line.set(n);
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        let text = match std::str::from_utf8(&buf) {
            Ok(t) => t,
            Err(e) => {
                return Some(Err(StoreError::BadChunk {
                    index: usize::MAX,
                    message: format!(
                        "stdin line {n}: not valid UTF-8 (byte {} of the line)",
                        e.valid_up_to() + 1
                    ),
                }))
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        return Some(decode_line(n, text).map_err(|e| StoreError::BadChunk {
            index: usize::MAX,
            message: format!("stdin {e}"),
        }));
    })
}
