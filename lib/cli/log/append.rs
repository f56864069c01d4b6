//! `ag-log append`: one user text, or a batch of NDJSON chunks, written atomically.

use std::cell::Cell;
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::cli::{CliError, CliResult, Ctx, Exit};
use crate::log::{decode_line, Chunk, ChunkData, NewChunk, Role};
use crate::store::{AppendTarget, NewSession, StoreError};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The session to append to: a handle, an id or unique prefix, a title or title fragment,
    /// `last` (this directory's latest chat session) or `last~N`
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
    /// The new session's id, chosen up front (a UUID), so a script knows it before it runs
    #[arg(long, requires = "new", value_name = "UUID", value_parser = parse_uuid)]
    session_id: Option<String>,
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

pub(crate) fn run(ctx: &mut Ctx, args: Args) -> CliResult<()> {
    let text = match args.text.as_deref() {
        Some("-") => Some(read_stdin_text()?),
        Some(t) => Some(t.to_string()),
        None => None,
    };
    let store = ctx.store()?;
    let target = target(&store, &args)?;
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
    // The whole batch is read before the store is opened for writing: a slow pipe or a person
    // typing must not hold the write lock that every other writer waits on. Its lines are
    // then decoded on a second thread while this one writes them; a bad line rolls the whole
    // batch back, so nothing is appended unless every line is a chunk.
    let result = match text {
        Some(t) => {
            let chunk = NewChunk::new(Role::User, ChunkData::text(t));
            crate::record::append(&store, target, std::iter::once(Ok(chunk)), &mut sink)
        }
        None => {
            let batch = read_batch(&ctx.home.dir)?;
            let input: Box<dyn BufRead + Send + '_> = match &batch {
                Batch::Held(raw) => Box::new(&raw[..]),
                Batch::Spooled(file) => {
                    Box::new(std::io::BufReader::with_capacity(256 * 1024, file))
                }
            };
            decoded_alongside(input, &line, |chunks| {
                crate::record::append(&store, target, chunks, &mut sink)
            })
        }
    };
    let (session, n) = result.map_err(|e| append_error(e, line.get()))?;
    let s = if n == 1 { "" } else { "s" };
    ctx.out
        .done(format!("{n} chunk{s} appended to session {}", session.id));
    if args.new && quiet {
        // `-q` with `--new`: the new session's id alone, for `id=$(ag-log append --new -q …)`.
        ctx.out.line(&session.id)?;
    } else if args.new {
        ctx.out
            .note(&format!("session {} {}", session.handle, session.id));
    }
    for c in &stored {
        ctx.out.line(&c.to_ndjson())?;
    }
    Ok(())
}

/// Where the chunks go: a new session (`--new`, in `--cwd` or here) or an existing one.
fn target(store: &crate::store::Store, args: &Args) -> CliResult<AppendTarget> {
    if !args.new {
        let reference = args.session.as_deref().unwrap_or("last");
        return Ok(AppendTarget::Session(store.resolve(reference)?.id));
    }
    let cwd = match &args.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    let cwd = std::fs::canonicalize(&cwd)
        .map_err(|e| CliError::from(e).context(format!("--cwd {}", cwd.display())))?;
    Ok(AppendTarget::New(Box::new(NewSession {
        id: args.session_id.clone(),
        title: args.title.clone().unwrap_or_default(),
        cwd: Some(cwd.to_string_lossy().into_owned()),
        ..Default::default()
    })))
}

/// A refused batch: which stdin line and why, and that nothing was appended.
fn append_error(e: StoreError, line: usize) -> CliError {
    match e {
        StoreError::BadChunk { index, message } if index == usize::MAX => {
            CliError::msg(message).with_hint(NOTHING_APPENDED)
        }
        StoreError::BadChunk { message, .. } => {
            CliError::msg(format!("stdin line {line}: {message}")).with_hint(NOTHING_APPENDED)
        }
        StoreError::EmptyBatch => CliError::usage("no chunks on stdin").with_hint(
            "pipe NDJSON chunks in, or give the message as an argument: ag-log append -s SESSION 'text'",
        ),
        e => CliError::from(e),
    }
}

/// Batches larger than this are spooled to an unlinked file in the store's directory instead
/// of being held in memory while they are checked.
const SPOOL_AT: usize = 32 << 20;

/// A batch of NDJSON lines read to the end of stdin before any write: held in memory, or,
/// when large, spooled raw to a private file.
enum Batch {
    Held(Vec<u8>),
    Spooled(std::fs::File),
}

fn read_batch(spool_dir: &Path) -> CliResult<Batch> {
    let mut stdin = std::io::stdin().lock();
    let mut raw = Vec::new();
    (&mut stdin)
        .take(SPOOL_AT as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(|e| CliError::from(e).context("reading stdin"))?;
    if raw.len() <= SPOOL_AT {
        return Ok(Batch::Held(raw));
    }
    let mut file = spool_file(spool_dir)?;
    let spool = |e: std::io::Error| {
        CliError::from(e).context(format!("spooling stdin in {}", spool_dir.display()))
    };
    file.write_all(&raw).map_err(spool)?;
    drop(raw);
    std::io::copy(&mut stdin, &mut file).map_err(spool)?;
    file.seek(SeekFrom::Start(0)).map_err(spool)?;
    Ok(Batch::Spooled(file))
}

/// Chunks decoded from `input` per channel message: few enough to keep both threads busy,
/// many enough that the hand-over costs nothing beside the decoding.
const DECODED_AT_ONCE: usize = 256;

/// Hand `write` the chunks of `input`, decoded on a second thread as it consumes them; `line`
/// follows the line of the chunk it was last given. A line that is not a chunk ends the
/// stream with its error. When `write` stops early, the decoding stops too.
fn decoded_alongside<T>(
    input: impl BufRead + Send,
    line: &Cell<usize>,
    write: impl FnOnce(&mut dyn Iterator<Item = Result<NewChunk, StoreError>>) -> T,
) -> T {
    type Decoded = Vec<(usize, Result<NewChunk, StoreError>)>;
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Decoded>(16);
        scope.spawn(move || {
            let at = Cell::new(0usize);
            let mut batch = Vec::with_capacity(DECODED_AT_ONCE);
            for c in ndjson_chunks(input, &at) {
                let bad = c.is_err();
                batch.push((at.get(), c));
                if bad || batch.len() == DECODED_AT_ONCE {
                    let sent = tx.send(std::mem::replace(
                        &mut batch,
                        Vec::with_capacity(DECODED_AT_ONCE),
                    ));
                    if bad || sent.is_err() {
                        return;
                    }
                }
            }
            if !batch.is_empty() {
                let _ = tx.send(batch);
            }
        });
        let mut chunks = rx.into_iter().flatten().map(|(n, c)| {
            line.set(n);
            c
        });
        write(&mut chunks)
    })
}

/// A private (0600) file in `dir` that is gone from the directory as soon as it is open.
fn spool_file(dir: &Path) -> CliResult<std::fs::File> {
    let path = dir.join(format!(".append-{}.spool", crate::ids::new_id()));
    let file = crate::paths::open_private_append(&path)
        .and_then(|_| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
        })
        .map_err(|e| CliError::from(e).context(format!("creating {}", path.display())))?;
    let _ = std::fs::remove_file(&path);
    Ok(file)
}

/// `--session-id`: a UUID in its canonical lower-case hyphenated form.
pub(crate) fn parse_uuid(s: &str) -> Result<String, String> {
    uuid::Uuid::parse_str(s.trim())
        .map(|u| u.hyphenated().to_string())
        .map_err(|e| format!("not a UUID ({e})"))
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
