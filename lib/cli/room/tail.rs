//! `ag-room tail`: a room's lines as text or JSON, optionally followed.

use std::collections::HashMap;

use super::{cwd, me, room_err};
use crate::cli::{escape_controls, CliError, CliResult, Ctx};
use crate::follow::Next;
use crate::room::claims;
use crate::room::tail::{shown, Followed};
use crate::room::{Line, LineKind};
use crate::store::Store;

#[derive(Debug, clap::Args)]
pub(crate) struct TailArgs {
    /// Keep following the room
    #[arg(short, long)]
    follow: bool,
    /// Start with the last N lines [default: all; with -f: 10]
    #[arg(short = 'n', long, value_name = "N")]
    lines: Option<usize>,
    /// Show every line: direct messages between others and receipts too
    #[arg(long)]
    all: bool,
}

/// The sessions room lines address, shown the one way ([`Store::shown`]: by handle), each
/// looked up once.
pub(super) struct Names<'a> {
    store: &'a Store,
    known: HashMap<String, String>,
}

impl<'a> Names<'a> {
    pub(super) fn new(store: &'a Store) -> Names<'a> {
        Names {
            store,
            known: HashMap::new(),
        }
    }

    pub(super) fn of(&mut self, id: &str) -> String {
        if let Some(n) = self.known.get(id) {
            return n.clone();
        }
        let n = self.store.shown(id);
        self.known.insert(id.to_string(), n.clone());
        n
    }
}

/// How a line reads on a terminal.
fn render(l: &Line, names: &mut Names) -> String {
    let t = l.ts.get(11..19).unwrap_or(&l.ts);
    let to =
        l.to.as_deref()
            .map(|t| format!(" → {}", names.of(t)))
            .unwrap_or_default();
    let body = match &l.ty {
        LineKind::Say => format!(
            "{}{to}: {}",
            l.from.display(),
            escape_controls(l.text.as_deref().unwrap_or(""), true)
        ),
        LineKind::Claim => format!(
            "{} claims {} ({}, {} s): {} [{}]",
            l.from.display(),
            l.paths.clone().unwrap_or_default().join(", "),
            l.mode.as_deref().unwrap_or("exclusive"),
            l.ttl_s.unwrap_or(claims::DEFAULT_TTL_S),
            escape_controls(l.intent.as_deref().unwrap_or(""), false),
            l.id
        ),
        LineKind::Release => format!(
            "{} releases {}",
            l.from.display(),
            l.claims.clone().unwrap_or_default().join(", ")
        ),
        other @ (LineKind::Delivered | LineKind::Ack | LineKind::Other(_)) => format!(
            "{} {other} {}",
            l.from.display(),
            l.in_reply_to.as_deref().unwrap_or("")
        ),
    };
    // A newline inside a message cannot start what looks like a line of its own: the rest
    // of the message is indented under it.
    format!(
        "{} {}",
        escape_controls(t, false),
        escape_controls(&body, true).replace('\n', "\n         ")
    )
}

pub(super) fn emit(ctx: &mut Ctx, names: &mut Names, l: &Line) -> CliResult<()> {
    if ctx.global.json {
        ctx.out
            .line(&serde_json::to_string(l).map_err(|e| CliError::msg(e.to_string()))?)?;
    } else {
        ctx.out.line(&render(l, names))?;
    }
    Ok(())
}

pub(super) fn tail(ctx: &mut Ctx, from: Option<&str>, a: TailArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let me = me(&store, from)?;
    let mut names = Names::new(&store);
    let room = ctx.rooms().worktree(&cwd()?);
    let keep = a.lines.or(if a.follow { Some(10) } else { None });
    let show = |l: &Line| shown(l, &me, a.all);
    let last = room.last(keep, &show).map_err(room_err)?;
    for w in &last.warnings {
        ctx.out.warn(w);
    }
    for l in &last.lines {
        emit(ctx, &mut names, l)?;
    }
    ctx.out.flush()?;
    if !a.follow {
        return Ok(());
    }
    let dir = ctx.home.rooms_dir();
    let mut failed = None;
    room.follow(
        &dir,
        last.end,
        &show,
        &mut |followed| match told(ctx, &mut names, followed) {
            Ok(next) => next,
            Err(e) => {
                failed = Some(e);
                Next::Stop
            }
        },
    )
    .map_err(room_err)?;
    failed.map_or(Ok(()), Err)
}

/// Print what following the room brought; stop once stdout's reader is gone.
fn told(ctx: &mut Ctx, names: &mut Names, followed: Followed) -> CliResult<Next> {
    if ctx.out.reader_gone() {
        return Ok(Next::Stop);
    }
    match followed {
        Followed::Down(e) => ctx
            .out
            .warn(&format!("{e}; still following, waiting for it")),
        Followed::Back => ctx.out.note("the room server is back"),
        Followed::Lines(lines, warnings) => {
            for w in warnings {
                ctx.out.warn(&w);
            }
            for l in &lines {
                emit(ctx, names, l)?;
            }
            if !lines.is_empty() {
                ctx.out.flush()?;
            }
        }
    }
    Ok(Next::Wait)
}
