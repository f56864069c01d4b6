//! Reading verbs: `cat` and `tail` (with `-f`).

use std::time::Duration;

use crate::log::event::{LiveEvent, TurnDone};

use super::render::{markdown, Transcript};
use crate::cli::{escape_controls, CliResult, Ctx};
use crate::follow::{Follower, Next};
use crate::log::Chunk;
use crate::store::{Page, Session, Store};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// A compact transcript for people
    Text,
    /// One JSON chunk per line (same as --json)
    Json,
    /// Markdown
    Md,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CatArgs {
    /// The session: a handle, an id or prefix, a title, `last` (this directory's latest chat) or `last~N`
    #[arg(value_name = "SESSION", default_value = "last")]
    session: String,
    /// Only the newest N chunks (of what the other bounds allow)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(..=i64::MAX as u64))]
    limit: Option<u64>,
    /// Only chunks with seq below SEQ
    #[arg(long, value_name = "SEQ", value_parser = clap::value_parser!(i64).range(0..))]
    before: Option<i64>,
    /// Only chunks with seq above SEQ
    #[arg(long, value_name = "SEQ", value_parser = clap::value_parser!(i64).range(0..))]
    after: Option<i64>,
    /// Only the chunks of one turn (its handle from a turn header, or its id)
    #[arg(long, value_name = "TURN")]
    turn: Option<String>,
    /// Output format
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    format: Format,
}

pub(crate) fn cat(ctx: &mut Ctx, args: CatArgs) -> CliResult<()> {
    let store = ctx.read_store()?;
    let session = store.resolve(&args.session)?;
    let format = if ctx.global.json {
        Format::Json
    } else {
        args.format
    };
    let turn = match args.turn.as_deref() {
        Some(t) => Some(store.resolve_turn(&session, t)?),
        None => None,
    };
    let page = Page {
        limit: args.limit,
        before: args.before,
        after: args.after,
        turn,
    };
    print_page(ctx, &store, &session, &page, format)
}

fn print_page(
    ctx: &mut Ctx,
    store: &Store,
    session: &Session,
    page: &Page,
    format: Format,
) -> CliResult<()> {
    let mut transcript = Transcript::default();
    let out = &mut ctx.out;
    // Markdown is data in a pipe or a file, kept as the log has it; on a terminal it is
    // untrusted text like the rest.
    let tty = out.stdout_is_terminal();
    store.for_each_chunk(session, page, |c| -> CliResult<()> {
        match format {
            Format::Json => out.line(&c.to_ndjson())?,
            Format::Md if tty => out.line(&crate::cli::escape_controls(&markdown(&c), true))?,
            Format::Md => out.line(&markdown(&c))?,
            Format::Text => transcript.chunk(out, &c)?,
        }
        Ok(())
    })
}

#[derive(Debug, clap::Args)]
pub(crate) struct TailArgs {
    /// The session: a handle, an id or prefix, a title, `last` (this directory's latest chat) or `last~N`
    #[arg(value_name = "SESSION", default_value = "last")]
    session: String,
    /// How many of the newest chunks to print first
    #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(..=i64::MAX as u64))]
    n: u64,
    /// Keep printing new chunks as they are written, until interrupted or the reader of stdout
    /// goes away; a running turn's text shows as it streams (on stderr; with --json, its
    /// chunk-open and chunk-delta events)
    #[arg(short, long)]
    follow: bool,
}

pub(crate) fn tail(ctx: &mut Ctx, args: TailArgs) -> CliResult<()> {
    let store = ctx.read_store()?;
    let session = store.resolve(&args.session)?;
    let json = ctx.global.json;
    let mut transcript = Transcript::default();
    let mut last = 0i64;
    let page = Page {
        limit: Some(args.n),
        ..Default::default()
    };
    let emit =
        |out: &mut crate::cli::Out, c: Chunk, transcript: &mut Transcript| -> CliResult<()> {
            if json && args.follow {
                let seal = LiveEvent::ChunkSeal {
                    session: c.session.clone(),
                    chunk: c.to_value(),
                };
                out.line(&seal.to_line())?;
                if c.data.is_turn_end() {
                    if let crate::log::ChunkData::System(m) = &c.data {
                        let fields = serde_json::Value::Object(m.clone());
                        let done = TurnDone::from_record(&c.session, &c.turn, &fields);
                        out.line(&LiveEvent::TurnDone(done).to_line())?;
                    }
                }
            } else if json {
                out.line(&c.to_ndjson())?;
            } else {
                transcript.chunk(out, &c)?;
            }
            Ok(())
        };
    // The view's length before the read: a chunk written after the read began is then either
    // read or followed, never skipped.
    let before = store.view_len(&session)?;
    {
        let out = &mut ctx.out;
        store.for_each_chunk(&session, &page, |c| -> CliResult<()> {
            last = last.max(c.seq);
            emit(out, c, &mut transcript)
        })?;
    }
    last = last.max(before);
    ctx.out.flush()?;
    if !args.follow {
        return Ok(());
    }
    // Any change under the home (or of a live file) wakes us; the poll interval is the
    // backstop for file systems where notifications do not arrive.
    let _ = crate::paths::create_private_dir(&crate::live::dir(&ctx.home));
    let follower = Follower::new(Duration::from_millis(500))
        .watch(&ctx.home.dir, false)
        .watch(&crate::live::dir(&ctx.home), false);
    let mut live = Follow::start(&store, &session, &ctx.home, last)?;
    follower.run(|| {
        // A reader that went away ends the follow even when nothing new comes to print.
        if ctx.out.reader_gone() {
            return Ok(Next::Stop);
        }
        let page = Page {
            after: Some(last),
            ..Default::default()
        };
        live.deltas(&mut ctx.out, &ctx.home, &session.id, json)?;
        let out = &mut ctx.out;
        store.for_each_chunk(&session, &page, |c| -> CliResult<()> {
            last = last.max(c.seq);
            live.sealed(out, &c.id, json);
            emit(out, c, &mut transcript)
        })?;
        ctx.out.flush()?;
        Ok(Next::Wait)
    })
}

/// How many of the newest chunks `tail -f` checks, when it starts, for blocks of the live
/// file that are sealed already.
const RECENT: i64 = 64;

/// The live part of `tail -f`: the open block's events from the running `ag-prompt`'s live
/// file (`--json`: its `chunk-open` and `chunk-delta` lines; for people, the text on stderr as
/// it comes), never those of a block already sealed in the store.
struct Follow {
    at: crate::live::Cursor,
    sealed: std::collections::HashSet<String>,
    /// The block whose text is on stderr (people only).
    streaming: Option<String>,
}

impl Follow {
    fn start(
        store: &crate::store::Store,
        session: &crate::store::Session,
        home: &crate::paths::Home,
        last: i64,
    ) -> CliResult<Follow> {
        let mut sealed = std::collections::HashSet::new();
        let page = Page {
            after: Some((last - RECENT).max(0)),
            ..Default::default()
        };
        store.for_each_chunk(session, &page, |c| -> CliResult<()> {
            sealed.insert(c.id);
            Ok(())
        })?;
        // What the live file held before we came: only its last block can still be open.
        let (events, _) = crate::live::read(home, &session.id, Default::default());
        if let Some(open) = events.iter().rev().find(|e| e["type"] == "chunk-open") {
            for e in &events {
                let id = e["id"].as_str().unwrap_or_default();
                if id != open["id"].as_str().unwrap_or_default() {
                    sealed.insert(id.to_string());
                }
            }
        }
        // Read the file from its start again: the sealed set leaves out what is done.
        Ok(Follow {
            at: crate::live::Cursor::default(),
            sealed,
            streaming: None,
        })
    }

    /// Print the new events of the live file.
    fn deltas(
        &mut self,
        out: &mut crate::cli::Out,
        home: &crate::paths::Home,
        session: &str,
        json: bool,
    ) -> CliResult<()> {
        let (events, at) = crate::live::read(home, session, self.at);
        self.at = at;
        for e in events {
            let id = e["id"].as_str().unwrap_or_default().to_string();
            if self.sealed.contains(&id) {
                continue;
            }
            if json {
                out.line(&e.to_string())?;
            } else if e["type"] == "chunk-open" && e["chunk_type"] == "text" {
                self.streaming = Some(id);
                out.stream_err(&out.dim("assistant (streaming): "));
            } else if e["type"] == "chunk-delta" && self.streaming.as_deref() == Some(&id) {
                out.stream_err(&escape_controls(e["text"].as_str().unwrap_or(""), true));
            }
        }
        Ok(())
    }

    /// A chunk the store has sealed: its live events are done with.
    fn sealed(&mut self, out: &mut crate::cli::Out, id: &str, json: bool) {
        if !json && self.streaming.as_deref() == Some(id) {
            out.stream_err("\n");
            self.streaming = None;
        }
        self.sealed.insert(id.to_string());
    }
}
